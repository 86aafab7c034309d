#pragma once
#include <optional>

#include "lpdt/nn/layer.h"
#include "lpdt/nn/quant_measure.h"

namespace lpdt::nn {

// Range BatchNorm (Banner et al. 2018; the reference's RangeBN, spec 7.4), per node:
//   training:   mean over (b, H, W); range = mean over `range_chunks` chunks of (max - min);
//               scale = 1 / (range * range_scale_factor(M) + 1e-5), M the chunk size; the
//               running mean and scale move towards them: r <- (1 - m) r + m batch
//               (m = quant.range_momentum, 0.9 as the reference);
//   evaluation: the running mean and scale;
//   out = (x - mean) * scale * gamma + beta, followed by ReLU when `relu` is set.
// In 8-bit models the input goes through a QuantMeasure, scale, gamma and beta are quantized
// (nearest, per-node range) and the gradient passed backwards is quantized to grad_bits.
// gamma = 1 (0 with zero_gamma: the last norm of an 8-bit residual branch, as Range EvoNorm's),
// beta = 0 at init; running mean 0, running scale 1.
//
// One departure from the reference (nn/flat_group_scales.h): a channel that is constant on a node
// in a batch (range 0: in MobileNetV2 a depthwise convolution of a channel ReLU6 zeroed) would
// get scale 1e5. Its output (x - mean) * scale is 0 whatever the scale, but the reference
// quantizes the scale vector with one range for the whole layer, so a step of 1e5 / 255 would
// round every other channel's scale (about 1) to 0 or 392. Such a channel takes the largest scale
// of the node's other channels instead (1 if all are constant), which leaves the quantization
// range as it would be without it and keeps the running scale finite.

class RangeBatchNorm : public Layer {
 public:
  RangeBatchNorm(Registry& registry, const std::string& name, std::int64_t channels,
                 const quant::QuantOptions& quant, bool relu, bool zero_gamma = false);
  // x: [b, k*C, H, W] float32 (channels-last) -> same shape
  at::Tensor forward(const Context& ctx, const at::Tensor& x) const override;

 private:
  std::int64_t channels_;
  quant::QuantOptions quant_;
  bool relu_;
  std::optional<QuantMeasure> input_;
  ParamRef gamma_;
  ParamRef beta_;
  BufferRef running_mean_;
  BufferRef running_scale_;
  quant::SiteId grad_site_ = 0;
};

// scale: [k*C] -> scale with each node's flat channels (scale >= kFlatRangeScale: range 0, or
// below the epsilon) set to the node's largest other scale (1 if none); no gradient reaches the
// replacement.
at::Tensor constant_channels_take_largest_scale(const at::Tensor& scale, std::int64_t k);

}  // namespace lpdt::nn
