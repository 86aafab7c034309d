#pragma once
#include "lpdt/nn/layer.h"
#include "lpdt/nn/module.h"

namespace lpdt::nn {

struct Conv2dOptions {
  std::int64_t in_channels = 0;
  std::int64_t out_channels = 0;
  std::int64_t kernel = 3;
  std::int64_t stride = 1;
  std::int64_t padding = 0;
  bool bias = false;
  Conv2dOptions& with_stride(std::int64_t s) {
    stride = s;
    return *this;
  }
  Conv2dOptions& with_padding(std::int64_t p) {
    padding = p;
    return *this;
  }
  Conv2dOptions& with_bias(bool b) {
    bias = b;
    return *this;
  }
};

// A convolution's parameters with the reference initialisation, for Conv2d and QConv2d:
// weight [out, in, kernel, kernel] ~ N(0, sqrt(2 / (kernel^2 * out_channels))) (He et al. 2015,
// fan-out, as the reference ResNet); bias zero (reference VGG).
struct ConvParams {
  ParamRef weight;
  ParamRef bias;  // meaningful when options.bias
};
ConvParams add_conv_params(Registry& registry, const std::string& name,
                           const Conv2dOptions& options);

// k nodes' convolutions as ONE grouped convolution (groups = k).
class Conv2d : public Layer {
 public:
  // Weight init: N(0, sqrt(2 / (kernel^2 * out_channels))) as the reference ResNet (He et al.
  // 2015, fan-out); bias zero-initialised (reference VGG).
  Conv2d(Registry& registry, const std::string& name, const Conv2dOptions& options);
  // x: [b, k*in, H, W] float32 -> [b, k*out, H', W'] float32
  at::Tensor forward(const Context& ctx, const at::Tensor& x) const override;
  const Conv2dOptions& options() const { return options_; }

 private:
  Conv2dOptions options_;
  ParamRef weight_;
  ParamRef bias_;
};

}  // namespace lpdt::nn
