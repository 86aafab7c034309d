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
  // Channel groups within one node (1: dense; in_channels: depthwise, as MobileNetV2). Both
  // channel counts must be divisible by it. Over k nodes the layer runs with k * groups groups.
  std::int64_t groups = 1;
  // Arithmetic in bfloat16 (model.precision = "bf16"): input, weight and bias rounded to
  // bfloat16 (round to nearest even), products summed in float32 by the backend (oneDNN, cuDNN),
  // the output rounded to bfloat16 and widened back to float32. Autograd differentiates the casts,
  // so the weight gradient arrives in float32 (computed from bfloat16 operands).
  bool bfloat16 = false;
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
  Conv2dOptions& with_groups(std::int64_t g) {
    groups = g;
    return *this;
  }
};

// A convolution's parameters with the reference initialisation, for Conv2d and QConv2d:
// weight [out, in/groups, kernel, kernel] ~ N(0, sqrt(2 / fan_out)) (He et al. 2015, fan-out, as
// the reference ResNet) with fan_out = kernel^2 * out_channels / groups, the outputs one input
// channel feeds (torchvision's kaiming_normal_ ignores groups and gives a depthwise 3x3 conv a
// std sqrt(groups) times smaller); bias zero (reference VGG). A ConfigError names the layer when
// a channel count is not divisible by groups.
struct ConvParams {
  ParamRef weight;
  ParamRef bias;  // meaningful when options.bias
};
ConvParams add_conv_params(Registry& registry, const std::string& name,
                           const Conv2dOptions& options);

// k nodes' convolutions as ONE grouped convolution (groups = k * options.groups).
class Conv2d : public Layer {
 public:
  // Weight init: add_conv_params.
  Conv2d(Registry& registry, const std::string& name, const Conv2dOptions& options);
  // x: [b, k*in, H, W] float32 -> [b, k*out, H', W'] float32 (bfloat16 arithmetic when
  // options.bfloat16)
  at::Tensor forward(const Context& ctx, const at::Tensor& x) const override;
  const Conv2dOptions& options() const { return options_; }

 private:
  // The convolution of x (already in the layer's arithmetic), in that arithmetic.
  at::Tensor forward_in(const Context& ctx, const at::Tensor& x) const;
  Conv2dOptions options_;
  ParamRef weight_;
  ParamRef bias_;
};

}  // namespace lpdt::nn
