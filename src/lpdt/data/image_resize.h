#pragma once
// Resizing and centre cropping of uint8 image batches, with torchvision's conventions, for the
// image-folder readers (resize at load time) and the resized-crop transforms (every step).
#include <torch/types.h>

#include <cstdint>
#include <utility>

namespace lpdt::data {

// Bilinear resize with antialiasing, as torchvision's Resize(antialias=True) on tensors and
// PIL's BILINEAR: when shrinking, the triangle filter is stretched by the scale factor so that
// every source pixel contributes (no aliasing); when enlarging it is plain bilinear
// interpolation (half-pixel centres, align_corners = false). Runs ATen's
// _upsample_bilinear2d_aa on a float32 copy, then rounds to nearest and clamps back to uint8,
// as torchvision does for uint8 tensors. Same size in and out: returns the images unchanged.
// images: [n, C, H, W] uint8 -> [n, C, height, width] uint8
torch::Tensor resize_bilinear(const torch::Tensor& images, int64_t height, int64_t width);

// torchvision's Resize(side) output size: the shorter side becomes `side`, the longer one
// int(side * long / short) (truncated), so a square stays square. Returns (height, width).
std::pair<int64_t, int64_t> shorter_side_size(int64_t height, int64_t width, int64_t side);

// The centred height x width window, offsets as torchvision's CenterCrop:
// top = round((H - height) / 2), left = round((W - width) / 2), halves to even (Python's round).
// A window larger than the images is a ConfigError.
// images: [n, C, H, W] -> [n, C, height, width] view
torch::Tensor center_crop(const torch::Tensor& images, int64_t height, int64_t width);

// Shorter side to `side`, then the centred side x side square: the load-time step of an image
// folder (stored size S). image: [n, C, H, W] uint8 -> [n, C, side, side] uint8
torch::Tensor resize_and_center_crop(const torch::Tensor& images, int64_t side);

}  // namespace lpdt::data
