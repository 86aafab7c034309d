#pragma once
#include <optional>
#include <string>
#include <vector>

#include "lpdt/nn/layer.h"
#include "lpdt/nn/layer_factory.h"
#include "lpdt/nn/residual_add.h"

namespace lpdt::models {

// The residual BasicBlock of both ResNets (He et al. 2016, figure 2 left), node-batched:
//   y = norm2(conv3x3(norm1(conv3x3/stride(x))))          norm1 with ReLU where the norm needs one
//   out = add(shortcut(x), y), then ReLU for BatchNorm / GroupNorm (EvoNorm gates by itself)
// with a conv1x1/stride + norm projection shortcut when the stride or the width changes, an
// identity one otherwise. At 8 bits the layers come quantized from the factory, norm2 starts at
// gamma = 0 (the reference's 8-bit ResNets zero-initialise each residual branch) and the add is
// quantized.
class BasicBlock {
 public:
  // prefix: the block's parameter names ("layer2.0"); shortcut_name: "shortcut" (the reference's
  // CIFAR ResNet) or "downsample" (torchvision's names, which the ImageNet ResNets keep).
  BasicBlock(const nn::LayerFactory& make, const std::string& prefix, std::int64_t in,
             std::int64_t out, std::int64_t stride, const std::string& shortcut_name);
  // x: [b, k*in, H, W] -> [b, k*out, H/stride, W/stride]
  at::Tensor forward(const nn::Context& ctx, const at::Tensor& x) const;

 private:
  bool relu_after_add_;
  std::unique_ptr<nn::Layer> conv1_, norm1_, conv2_, norm2_;
  std::unique_ptr<nn::Layer> shortcut_conv_, shortcut_norm_;  // null: identity shortcut
  std::optional<nn::ResidualAdd> add_;
};

// Stages of BasicBlocks as both ResNets stack them: stage s has blocks_per_stage[s] blocks of
// widths[s] channels, named "layer<s+1>.<i>"; the first block of every stage after the first
// halves the resolution (stride 2).
std::vector<BasicBlock> basic_block_stages(const nn::LayerFactory& make, std::int64_t in,
                                           const std::vector<std::int64_t>& widths,
                                           const std::vector<std::int64_t>& blocks_per_stage,
                                           const std::string& shortcut_name);

}  // namespace lpdt::models
