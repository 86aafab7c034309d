#pragma once
#include "lpdt/nn/conv2d.h"
#include "lpdt/nn/layer.h"
#include "lpdt/nn/quant_measure.h"

namespace lpdt::nn {

// The paper's 8-bit convolution (reference QConv2d, spec 7.2): input fake-quantized by a
// QuantMeasure (stochastic in training), weight and bias by their per-node [min, max] with
// round-to-nearest, and gradient bifurcation: the weight gradient from the float output gradient,
// the layer gradient from the output gradient at quant.grad_bits. Master weights stay float.
// k nodes run as one grouped convolution (k * options.groups groups). Grouped / depthwise
// convolutions run on the simulated backend only: the integer backend's kernels are dense per
// node (quant/int8_conv.h), and the constructor throws a ConfigError for groups > 1 there.
class QConv2d : public Layer {
 public:
  QConv2d(Registry& registry, const std::string& name, const Conv2dOptions& options,
          const quant::QuantOptions& quant);
  // x: [b, k*in, H, W] float32 -> [b, k*out, H', W'] float32
  at::Tensor forward(const Context& ctx, const at::Tensor& x) const override;

 private:
  Conv2dOptions options_;
  quant::QuantOptions quant_;
  QuantMeasure input_;
  ParamRef weight_;
  ParamRef bias_;
  quant::SiteId grad_site_;
};

}  // namespace lpdt::nn
