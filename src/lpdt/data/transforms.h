#pragma once
// Batch image transforms. Random transforms are split into "draw" (consumes the caller's Rng,
// one draw per sample in sample order) and "apply" (batched tensor ops, no per-pixel C++
// loop), so a node-batched loader can draw from each node's own stream and still transform all
// k*b samples at once.
#include <torch/types.h>

#include <vector>

namespace lpdt {
class Rng;
}

namespace lpdt::data {

// (x / 255 - mean[c]) / std[c] per channel, as torchvision's ToTensor + Normalize.
// images: [..., C, H, W] uint8 -> same shape float32. mean/std: C values in [0, 1] units.
torch::Tensor normalize(const torch::Tensor& images, const std::vector<double>& mean,
                        const std::vector<double>& std);

// Centred zero padding up to height x width (e.g. Fashion-MNIST 28x28 -> 32x32, 2 pixels each
// side; an odd difference puts the extra row/column at the bottom/right). A target smaller than
// the images is a ConfigError.
// images: [n, C, H, W] uint8 -> [n, C, height, width] uint8
torch::Tensor pad_to(const torch::Tensor& images, int64_t height, int64_t width);

// Random crop after zero padding (torchvision RandomCrop(size=(H, W), padding=p)).
// Offsets: [n, 2] int64 rows (top, left), each in [0, 2p]; drawn per sample as
// top = rng.below(2p + 1), left = rng.below(2p + 1) (torchvision draws top first too).
torch::Tensor draw_crop_offsets(int64_t n, int64_t padding, Rng& rng);  // [n, 2] int64
// Pads the whole batch once, then copies every sample's window out of it.
// images: [n, C, H, W] (any dtype) -> [n, C, H, W]; offsets: [n, 2] int64
torch::Tensor apply_crop(const torch::Tensor& images, int64_t padding,
                         const torch::Tensor& offsets);
torch::Tensor random_crop(const torch::Tensor& images, int64_t padding, Rng& rng);

// Random horizontal flip with probability 1/2 per sample: flip_i = rng.uniform() < 0.5.
torch::Tensor draw_flips(int64_t n, Rng& rng);  // [n] bool
// Flips (last dim) the samples whose mask is true. images: [n, C, H, W]; mask: [n] bool
torch::Tensor apply_flips(const torch::Tensor& images, const torch::Tensor& mask);
torch::Tensor random_horizontal_flip(const torch::Tensor& images, Rng& rng);

// Training-time augmentation of one node's samples, in the reference order
// (lpdl-reference-spec.md 8.1: RandomHorizontalFlip, then RandomCrop(padding)).
struct AugmentOptions {
  int64_t crop_padding = 0;      // 0: no random crop
  bool horizontal_flip = false;  // random horizontal flip with p = 1/2
  int64_t pad_height = 0;        // pad_to target before augmenting; 0: keep the size
  int64_t pad_width = 0;
};

// The per-sample random draws of augment(): flips first, then crop offsets.
struct AugmentDraws {
  torch::Tensor flips;         // [n] bool, undefined when flipping is off
  torch::Tensor crop_offsets;  // [n, 2] int64, undefined when cropping is off
};
AugmentDraws draw_augment(int64_t n, const AugmentOptions& options, Rng& rng);
// pad_to (if asked), then flips, then crops. images: [n, C, H, W] uint8 -> [n, C, H', W'] uint8
torch::Tensor apply_augment(const torch::Tensor& images, const AugmentOptions& options,
                            const AugmentDraws& draws);

}  // namespace lpdt::data
