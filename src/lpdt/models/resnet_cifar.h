#pragma once
#include <optional>

#include "lpdt/models/model.h"
#include "lpdt/nn/conv2d.h"
#include "lpdt/nn/linear.h"
#include "lpdt/nn/norm_act.h"

namespace lpdt::models {

// CIFAR-style ResNet of depth 6n+2 (He et al. 2016, section 4.2), as the reference's
// resnet.py (spec section 6): conv3x3(C->16) -> norm -> 3 stages of n BasicBlocks (16, 32/2,
// 64/2 channels) -> global average pool -> Linear(64, classes). ResNet-20: n = 3, 273,258
// parameters with EvoNorm; the paper's "ResNet-54" is depth 54 (n = 8), 760,458 parameters.
class ResNetCifar : public Model {
 public:
  explicit ResNetCifar(const ModelOptions& options);
  std::string name() const override { return name_; }
  at::Tensor forward(const nn::Context& ctx, const at::Tensor& x) const override;

 private:
  struct BasicBlock {
    nn::Conv2d conv1;
    nn::NormAct norm1;
    nn::Conv2d conv2;
    nn::NormAct norm2;
    std::optional<nn::Conv2d> shortcut_conv;
    std::optional<nn::NormAct> shortcut_norm;
    bool relu_after_add;
  };
  std::string name_;
  std::optional<nn::Conv2d> stem_conv_;
  std::optional<nn::NormAct> stem_norm_;
  std::vector<BasicBlock> blocks_;
  std::optional<nn::Linear> fc_;
};

}  // namespace lpdt::models
