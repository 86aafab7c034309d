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
// gamma = 1, beta = 0 at init; running mean 0, running scale 1.
class RangeBatchNorm : public Layer {
 public:
  RangeBatchNorm(Registry& registry, const std::string& name, std::int64_t channels,
                 const quant::QuantOptions& quant, bool relu);
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

}  // namespace lpdt::nn
