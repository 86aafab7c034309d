#include "lpdt/models/resnet_cifar.h"

#include "lpdt/core/error.h"
#include "lpdt/nn/node_layout.h"

namespace lpdt::models {

ResNetCifar::ResNetCifar(const ModelOptions& options) {
  // The paper's "ResNet-54" is the reference's int((54 - 2) / 6) = 8 blocks per stage.
  const bool paper_resnet54 = options.depth == 54;
  if (options.depth < 8 || ((options.depth - 2) % 6 != 0 && !paper_resnet54)) {
    throw ConfigError("model.depth = " + std::to_string(options.depth) +
                      " is not a CIFAR ResNet depth: expected 6n+2, e.g. 20, 32, 44, 54 (the "
                      "paper's ResNet-54), 56, 110");
  }
  const std::int64_t n = (options.depth - 2) / 6;
  name_ = "resnet" + std::to_string(options.depth);
  const nn::NormKind norm = nn::parse_norm_kind(options.norm);
  // With EvoNorm the reference has no activation after the residual add; BN/GN use ReLU.
  const bool relu = norm != nn::NormKind::kEvoNorm;
  using nn::Conv2dOptions;
  stem_conv_.emplace(registry_, "conv1", Conv2dOptions{options.in_channels, 16, 3}.with_padding(1));
  stem_norm_.emplace(registry_, "bn1", norm, 16, options.groups, relu);
  std::int64_t in = 16;
  const std::int64_t widths[3] = {16, 32, 64};
  for (int stage = 0; stage < 3; ++stage) {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t out = widths[stage];
      const std::int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      const std::string prefix = "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      BasicBlock block{
          nn::Conv2d(registry_, prefix + ".conv1",
                     Conv2dOptions{in, out, 3}.with_stride(stride).with_padding(1)),
          nn::NormAct(registry_, prefix + ".bn1", norm, out, options.groups, relu),
          nn::Conv2d(registry_, prefix + ".conv2", Conv2dOptions{out, out, 3}.with_padding(1)),
          nn::NormAct(registry_, prefix + ".bn2", norm, out, options.groups, false),
          std::nullopt,
          std::nullopt,
          relu};
      if (stride != 1 || in != out) {
        block.shortcut_conv.emplace(registry_, prefix + ".shortcut.0",
                                    Conv2dOptions{in, out, 1}.with_stride(stride));
        block.shortcut_norm.emplace(registry_, prefix + ".shortcut.1", norm, out, options.groups,
                                    false);
      }
      blocks_.push_back(std::move(block));
      in = out;
    }
  }
  fc_.emplace(registry_, "fc", 64, options.num_classes);
}

at::Tensor ResNetCifar::forward(const nn::Context& ctx, const at::Tensor& x) const {
  at::Tensor out = stem_norm_->forward(ctx, stem_conv_->forward(ctx, nn::nodes_to_channels(x)));
  for (const BasicBlock& block : blocks_) {
    at::Tensor y = block.norm1.forward(ctx, block.conv1.forward(ctx, out));
    y = block.norm2.forward(ctx, block.conv2.forward(ctx, y));
    at::Tensor residual = out;
    if (block.shortcut_conv) {
      residual = block.shortcut_norm->forward(ctx, block.shortcut_conv->forward(ctx, out));
    }
    out = y + residual;
    if (block.relu_after_add) out = at::relu(out);
  }
  // Global average pool (the reference's AvgPool2d(8) on 8x8 maps; any input size here).
  const at::Tensor pooled = out.mean({2, 3});  // [b, k*64]
  return fc_->forward(ctx, nn::channels_to_nodes(pooled.unsqueeze(-1).unsqueeze(-1), ctx.k));
}

}  // namespace lpdt::models
