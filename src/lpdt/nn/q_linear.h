#pragma once
#include "lpdt/nn/layer.h"
#include "lpdt/nn/quant_measure.h"

namespace lpdt::nn {

// The paper's 8-bit linear layer (reference QLinear): as QConv2d, over a batched matmul.
class QLinear : public Layer {
 public:
  // weight_std > 0: weight ~ N(0, weight_std), bias 0 (the reference 8-bit ResNet's classifier,
  // N(0, 0.01)); otherwise PyTorch's default init (kaiming-uniform(a = sqrt 5), U(+-1/sqrt(in))).
  QLinear(Registry& registry, const std::string& name, std::int64_t in_features,
          std::int64_t out_features, const quant::QuantOptions& quant, bool bias = true,
          double weight_std = 0.0);
  // x: [k, b, in] float32 -> [k, b, out] float32
  at::Tensor forward(const Context& ctx, const at::Tensor& x) const override;

 private:
  quant::QuantOptions quant_;
  QuantMeasure input_;
  bool has_bias_;
  ParamRef weight_;
  ParamRef bias_;
  quant::SiteId grad_site_;
};

}  // namespace lpdt::nn
