#pragma once
#include <optional>

#include "lpdt/models/model.h"
#include "lpdt/nn/layer.h"
#include "lpdt/nn/residual_add.h"

namespace lpdt::models {

// MobileNetV2 (Sandler et al. 2018, table 2): conv3x3/2 (C->32) -> norm + ReLU6 -> inverted
// residual blocks (t, c, n, s) = (1,16,1,1) (6,24,2,2) (6,32,3,2) (6,64,4,2) (6,96,3,1)
// (6,160,3,2) (6,320,1,1) -> conv1x1 (320->1280) -> norm + ReLU6 -> global average pool ->
// Linear(1280, classes) ~ N(0, 0.01), bias 0 (torchvision), without torchvision's dropout.
// Block: [conv1x1 expand (t > 1) -> norm + ReLU6] -> depthwise conv3x3/s -> norm + ReLU6 ->
// conv1x1 project -> norm (linear bottleneck); residual add when s = 1 and in == out.
// 3,504,872 parameters at 1,000 classes with BatchNorm, as torchvision's mobilenet_v2.
//
// Input size rule: with model.height <= 32 (CIFAR, or 28x28 datasets) the common CIFAR
// adaptation is used: the stem and the second block group (6,24,2,2) get stride 1, so a 32x32
// input ends on a 4x4 map instead of 1x1. Larger inputs (Imagenette 128/160, ImageNet 224) get
// the paper's strides.
//
// Norms: BatchNorm / GroupNorm / none are followed by ReLU6 where the paper has it. EvoNorm
// (fp32) and Range EvoNorm (8 bits) gate by themselves, so they replace "norm + ReLU6" and the
// projection's plain norm alike, as the reference's EvoNorm ResNets use EvoNorm before the
// residual add: with EvoNorm the bottleneck is not strictly linear.
// At 8 bits (LayerFactory): QConv2d (the depthwise one as a grouped QConv2d; on the integer
// backend lpdt's int8 depthwise kernels, quant/int8_depthwise_conv.h), Range EvoNorm (Range
// BatchNorm + ReLU6),
// quantized residual add, QLinear classifier; the projection norm of a block with a residual
// add starts with gamma = 0, as the 8-bit ResNets.
class MobileNetV2 : public Model {
 public:
  explicit MobileNetV2(const ModelOptions& options);
  std::string name() const override { return name_; }
  at::Tensor forward(const nn::Context& ctx, const at::Tensor& x) const override;

 private:
  struct InvertedResidual {
    std::unique_ptr<nn::Layer> expand_conv, expand_norm;  // null when t = 1
    std::unique_ptr<nn::Layer> depthwise_conv, depthwise_norm;
    std::unique_ptr<nn::Layer> project_conv, project_norm;
    std::optional<nn::ResidualAdd> add;  // stride 1 and in == out only
  };
  // x: [b, k*C, H, W] -> ReLU6 when the norm does not gate by itself, else x.
  at::Tensor activation(const at::Tensor& x) const;

  std::string name_;
  bool relu6_ = false;
  std::unique_ptr<nn::Layer> stem_conv_, stem_norm_;
  std::vector<InvertedResidual> blocks_;
  std::unique_ptr<nn::Layer> head_conv_, head_norm_;
  std::unique_ptr<nn::Layer> fc_;
};

}  // namespace lpdt::models
