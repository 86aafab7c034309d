#pragma once
#include "lpdt/models/basic_block.h"
#include "lpdt/models/model.h"
#include "lpdt/nn/layer.h"

namespace lpdt::models {

// ImageNet-style ResNet-18 / ResNet-34 (He et al. 2016, table 1), as the reference's Imagenette
// ResNet-18 (spec section 6): conv7x7/2 (C->64) -> norm -> 3x3/2 max pool -> 4 stages of
// BasicBlocks (64, 128/2, 256/2, 512/2 channels; 2,2,2,2 blocks for depth 18, 3,4,6,3 for 34)
// with conv1x1/2 + norm projection shortcuts -> global average pool -> Linear(512, classes).
// Parameters, 10 classes: 11,181,642 with BatchNorm (torchvision's resnet18 at 1,000 classes:
// 11,689,512), 11,186,442 with EvoNorm (the reference). The block is ResNetCifar's
// (models/basic_block.h), with torchvision's "downsample" names for the shortcut. Every norm
// follows model.norm (the reference's ImageNet ResNet uses EvoNorm in the blocks whatever its
// --normtype says; only its stem follows it).
// The average pool is global (the reference's AvgPool2d(7) on 224x224 inputs), so any input size
// works: Imagenette at 160 or 128, 32x32 in tests (a 1x1 map after the last stage).
// At 8 bits as ResNetCifar: QConv2d, Range EvoNorm (the last norm of each residual branch with
// gamma = 0), quantized residual add, QLinear classifier ~ N(0, 0.01). The max pool needs no
// quantization of its own: the max of quantized values is one of them.
class ResNetImageNet : public Model {
 public:
  // depth: 18 or 34; a ConfigError otherwise.
  ResNetImageNet(const ModelOptions& options, std::int64_t depth);
  std::string name() const override { return name_; }
  at::Tensor forward(const nn::Context& ctx, const at::Tensor& x) const override;

 private:
  std::string name_;
  std::unique_ptr<nn::Layer> stem_conv_, stem_norm_;
  std::vector<BasicBlock> blocks_;
  std::unique_ptr<nn::Layer> fc_;
};

}  // namespace lpdt::models
