#pragma once
// Node-batched layer normalisation over the last dimension (Ba et al. 2016), with each node's
// own gain and bias: y = (x - mean) / sqrt(var + eps) * gamma + beta.
//
// At 8 bits the statistics and the normalisation stay in float32 and gamma, beta are quantized
// per node (round to nearest) like every other weight. Why float: the normalisation divides by a
// standard deviation computed from hundreds of values, whose dynamic range 8-bit codes do not
// cover (the reason the paper replaces BatchNorm's variance with a range in Range EvoNorm); its
// input is the output of 8-bit GEMMs and residual adds, and its output is quantized again by the
// next 8-bit linear layer, so every GEMM still runs on 8-bit operands (docs/quantization.md).
#include "lpdt/nn/module.h"
#include "lpdt/quant/quant_options.h"

namespace lpdt::nn {

class LayerNorm {
 public:
  LayerNorm(Registry& registry, const std::string& name, std::int64_t dim,
            const quant::QuantOptions& quant, double eps = 1e-12);
  // x: [k, ..., dim] float32 -> same shape
  at::Tensor forward(const Context& ctx, const at::Tensor& x) const;

 private:
  std::string name_;
  std::int64_t dim_;
  double eps_;
  quant::QuantOptions quant_;
  ParamRef gamma_;
  ParamRef beta_;
};

}  // namespace lpdt::nn
