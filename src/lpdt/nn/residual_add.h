#pragma once
#include <optional>

#include "lpdt/nn/quant_measure.h"

namespace lpdt::nn {

// The residual add of a ResNet block. In 8-bit models it is the reference's Qsum: both inputs
// fake-quantized (each by its own QuantMeasure) and the gradient of the sum quantized to
// grad_bits in backward.
class ResidualAdd {
 public:
  ResidualAdd(Registry& registry, const std::string& name, const quant::QuantOptions& quant);
  // a, b: [b, k*C, H, W] float32 -> a + b
  at::Tensor forward(const Context& ctx, const at::Tensor& residual, const at::Tensor& x) const;

 private:
  std::string name_;
  quant::QuantOptions quant_;
  std::optional<QuantMeasure> quantize_residual_;
  std::optional<QuantMeasure> quantize_x_;
  quant::SiteId grad_site_ = 0;
};

}  // namespace lpdt::nn
