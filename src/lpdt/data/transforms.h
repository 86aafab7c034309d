#pragma once
// Batch image transforms. Random transforms are split into "draw" (consumes the caller's Rng,
// one draw per sample in sample order) and "apply" (batched tensor ops, no per-pixel C++
// loop), so a node-batched loader can draw from each node's own stream and still transform all
// k*b samples at once. Draws are made on the host; normalize, pad_to, apply_flips and apply_crop
// run on the images' device (a GPU included: a few kernels per batch, no host synchronisation,
// draws passed in on that device); the resized and centre crops run on the CPU only.
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
// normalize()'s per-channel affine map y = x * scale[c] + shift[c] (1/255 folded into scale) as
// tensors on one device, made once: normalising a batch on a GPU then copies nothing from the host.
struct NormalizeMap {
  torch::Tensor scale;  // [C, 1, 1] float32
  torch::Tensor shift;  // [C, 1, 1] float32
};
NormalizeMap make_normalize_map(const std::vector<double>& mean, const std::vector<double>& std,
                                torch::Device device);
// images: [..., C, H, W] uint8 on the map's device -> same shape float32
torch::Tensor normalize(const torch::Tensor& images, const NormalizeMap& map);

// Centred zero padding up to height x width (e.g. Fashion-MNIST 28x28 -> 32x32, 2 pixels each
// side; an odd difference puts the extra row/column at the bottom/right). A target smaller than
// the images is a ConfigError.
// images: [n, C, H, W] uint8 -> [n, C, height, width] uint8
torch::Tensor pad_to(const torch::Tensor& images, int64_t height, int64_t width);

// Random crop after zero padding (torchvision RandomCrop(size=(H, W), padding=p)).
// Offsets: [n, 2] int64 rows (top, left), each in [0, 2p]; drawn per sample as
// top = rng.below(2p + 1), left = rng.below(2p + 1) (torchvision draws top first too).
torch::Tensor draw_crop_offsets(int64_t n, int64_t padding, Rng& rng);  // [n, 2] int64
// Pads the whole batch once, then copies every sample's window out of it: on the CPU one copy per
// sample, elsewhere apply_crop_by_gather.
// images: [n, C, H, W] (any dtype) -> [n, C, H, W]; offsets: [n, 2] int64 on the images' device
torch::Tensor apply_crop(const torch::Tensor& images, int64_t padding,
                         const torch::Tensor& offsets);
// The same windows as two gathers over the padded batch (rows, then columns): a fixed number of
// kernels whatever n, the form for a GPU (on the CPU the per-sample copies were measured faster).
// Offsets are checked against [0, 2 * padding] only when they are on the CPU (reading them on a
// GPU would synchronise with it); out-of-range offsets on a GPU are a caller's bug.
torch::Tensor apply_crop_by_gather(const torch::Tensor& images, int64_t padding,
                                   const torch::Tensor& offsets);
torch::Tensor random_crop(const torch::Tensor& images, int64_t padding, Rng& rng);

// Random horizontal flip with probability 1/2 per sample: flip_i = rng.uniform() < 0.5.
torch::Tensor draw_flips(int64_t n, Rng& rng);  // [n] bool
// Flips (last dim) the samples whose mask is true, as one select between the batch and its
// mirror image (no count of the flipped samples, so no host synchronisation on a GPU).
// images: [n, C, H, W]; mask: [n] bool on the images' device
torch::Tensor apply_flips(const torch::Tensor& images, const torch::Tensor& mask);
torch::Tensor random_horizontal_flip(const torch::Tensor& images, Rng& rng);

// RandomResizedCrop (torchvision's, Szegedy et al. 2015): a window of a random area fraction
// in [0.08, 1] and aspect ratio (log-uniform) in [3/4, 4/3], resized to size x size. Per sample,
// torchvision's get_params with our stream: up to 10 attempts of
//   area = H W (0.08 + 0.92 u1); ratio = exp(log(3/4) + (log(4/3) - log(3/4)) u2)
//   w = round(sqrt(area ratio)), h = round(sqrt(area / ratio))   (halves to even, as Python)
//   accepted when 0 < w <= W and 0 < h <= H: top = below(H - h + 1), left = below(W - w + 1)
// and after 10 rejections the centred window of the whole image clamped to the ratio range.
inline constexpr double kResizedCropMinScale = 0.08;
inline constexpr double kResizedCropMaxScale = 1.0;
inline constexpr double kResizedCropMinRatio = 3.0 / 4.0;
inline constexpr double kResizedCropMaxRatio = 4.0 / 3.0;
inline constexpr int kResizedCropAttempts = 10;
// Boxes of n samples of height x width images: [n, 4] int64 rows (top, left, h, w).
torch::Tensor draw_resized_crop_boxes(int64_t n, int64_t height, int64_t width, Rng& rng);
// Cuts every sample's box and resizes it to size x size with antialiased bilinear filtering
// (image_resize.h; torchvision's resized_crop with antialias=True on uint8 tensors). One resize
// per sample (the boxes differ), spread over LibTorch's intra-op threads.
// images: [n, C, H, W] uint8 -> [n, C, size, size] uint8; boxes: [n, 4] int64
torch::Tensor apply_resized_crop(const torch::Tensor& images, const torch::Tensor& boxes,
                                 int64_t size);
torch::Tensor random_resized_crop(const torch::Tensor& images, int64_t size, Rng& rng);

// The usual ImageNet evaluation crop: resize the shorter side to floor(size / 0.875) (e.g. 256
// for 224, 146 for 128, 160 for 140), then cut the centred size x size window. When the shorter
// side already has that length (an image folder stored at S = size / 0.875) only the crop runs.
inline constexpr double kCenterCropFraction = 0.875;
int64_t center_crop_resize_side(int64_t size);
// images: [n, C, H, W] uint8 -> [n, C, size, size] uint8
torch::Tensor eval_center_crop(const torch::Tensor& images, int64_t size);

// Training-time augmentation of one node's samples, in the reference order
// (lpdl-reference-spec.md 8.1: RandomHorizontalFlip, then RandomCrop(padding)); with a random
// resized crop, torchvision's ImageNet order (RandomResizedCrop, then RandomHorizontalFlip).
struct AugmentOptions {
  int64_t crop_padding = 0;      // 0: no random crop
  bool horizontal_flip = false;  // random horizontal flip with p = 1/2
  int64_t pad_height = 0;        // pad_to target before augmenting; 0: keep the size
  int64_t pad_width = 0;
  // Output side of RandomResizedCrop; 0: off.
  int64_t random_resized_crop = 0;
  // Evaluation crop side (eval_center_crop); 0: off. EvalBatches apply it; the training loader
  // applies it instead of the random resized crop when that is off, so that training and
  // evaluation inputs have the same size.
  int64_t center_crop = 0;
};

// The per-sample random draws of augment(): resized-crop boxes first, then flips, then crop
// offsets (each over all n samples).
struct AugmentDraws {
  torch::Tensor resized_crop_boxes;  // [n, 4] int64, undefined when the resized crop is off
  torch::Tensor flips;               // [n] bool, undefined when flipping is off
  torch::Tensor crop_offsets;        // [n, 2] int64, undefined when cropping is off
};
// height / width: the images' size after pad_to, needed by the random resized crop only.
AugmentDraws draw_augment(int64_t n, const AugmentOptions& options, Rng& rng, int64_t height = 0,
                          int64_t width = 0);
// pad_to (if asked), then the random resized crop (or else the centre crop, if asked), then
// flips, then padded crops. images: [n, C, H, W] uint8 -> [n, C, H', W'] uint8; draws on the
// images' device. A resized or centre crop needs images on the CPU (ConfigError otherwise).
torch::Tensor apply_augment(const torch::Tensor& images, const AugmentOptions& options,
                            const AugmentDraws& draws);

}  // namespace lpdt::data
