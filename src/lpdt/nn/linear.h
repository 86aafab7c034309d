#pragma once
#include "lpdt/nn/layer.h"
#include "lpdt/nn/module.h"

namespace lpdt::nn {

// A linear layer's parameters, for Linear and QLinear. Init as torch.nn.Linear (the reference's
// fc): weight and bias U(-1/sqrt(in), 1/sqrt(in)); weight_std > 0: N(0, weight_std) and a zero
// bias (the reference 8-bit ResNet's fc).
struct LinearParams {
  ParamRef weight;  // [out, in]
  ParamRef bias;    // [out], meaningful when bias
};
LinearParams add_linear_params(Registry& registry, const std::string& name,
                               std::int64_t in_features, std::int64_t out_features, bool bias,
                               double weight_std);

// k nodes' fully connected layers as one batched matrix product.
class Linear : public Layer {
 public:
  // Init as torch.nn.Linear (the reference's fc): weight and bias U(-1/sqrt(in), 1/sqrt(in)).
  // `weight_std` > 0 replaces it with N(0, weight_std) and a zero bias (reference 8-bit fc).
  Linear(Registry& registry, const std::string& name, std::int64_t in_features,
         std::int64_t out_features, bool bias = true, double weight_std = 0.0);
  // x: [k, b, in] float32 -> [k, b, out] float32
  at::Tensor forward(const Context& ctx, const at::Tensor& x) const override;

 private:
  std::int64_t in_features_;
  std::int64_t out_features_;
  bool has_bias_;
  ParamRef weight_;
  ParamRef bias_;
};

}  // namespace lpdt::nn
