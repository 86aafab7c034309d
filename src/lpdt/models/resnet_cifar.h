#pragma once
#include "lpdt/models/basic_block.h"
#include "lpdt/models/model.h"
#include "lpdt/nn/layer.h"

namespace lpdt::models {

// CIFAR-style ResNet of depth 6n+2 (He et al. 2016, section 4.2), as the reference's
// resnet.py (spec section 6): conv3x3(C->16) -> norm -> 3 stages of n BasicBlocks (16, 32/2,
// 64/2 channels) -> global average pool -> Linear(64, classes). ResNet-20: n = 3, 273,258
// parameters with EvoNorm; the paper's "ResNet-54" is depth 54 (n = 8), 760,458 parameters.
// At 8 bits (reference spec 7.5): QConv2d, Range EvoNorm everywhere (the last norm of each
// residual branch with gamma = 0), quantized residual add, QLinear classifier ~ N(0, 0.01).
class ResNetCifar : public Model {
 public:
  explicit ResNetCifar(const ModelOptions& options);
  std::string name() const override { return name_; }
  at::Tensor forward(const nn::Context& ctx, const at::Tensor& x) const override;

 private:
  std::string name_;
  std::unique_ptr<nn::Layer> stem_conv_, stem_norm_;
  std::vector<BasicBlock> blocks_;
  std::unique_ptr<nn::Layer> fc_;
};

}  // namespace lpdt::models
