#include "lpdt/models/resnet_cifar.h"

#include "lpdt/core/error.h"
#include "lpdt/nn/layer_factory.h"
#include "lpdt/nn/node_layout.h"
#include "lpdt/nn/tracing_layer.h"

namespace lpdt::models {

ResNetCifar::ResNetCifar(const ModelOptions& options) {
  // The paper's "ResNet-54" is the reference's int((54 - 2) / 6) = 8 blocks per stage.
  const bool paper_resnet54 = options.depth == 54;
  if (options.depth < 8 || ((options.depth - 2) % 6 != 0 && !paper_resnet54)) {
    throw ConfigError("model.depth = " + std::to_string(options.depth) +
                      " is not a CIFAR ResNet depth: expected 6n+2, e.g. 20, 32, 44, 54 (the "
                      "paper's ResNet-54), 56, 110");
  }
  if (options.depth > kDeepestCifarResNet) {
    throw ConfigError("model.depth = " + std::to_string(options.depth) +
                      " is deeper than any CIFAR ResNet: expected at most " +
                      std::to_string(kDeepestCifarResNet) + " (He et al.'s ResNet-1202)");
  }
  const std::int64_t n = (options.depth - 2) / 6;
  name_ = "resnet" + std::to_string(options.depth);
  const nn::LayerFactory make(registry_, nn::parse_norm_kind(options.norm), options.groups,
                              options.quant, options.residual_init);
  if (make.low_precision()) name_ += "-int8";
  const bool relu = make.norm_needs_relu();
  using nn::Conv2dOptions;
  stem_conv_ = make.conv("conv1", Conv2dOptions{options.in_channels, 16, 3}.with_padding(1));
  stem_norm_ = make.norm("bn1", 16, relu);
  blocks_ = basic_block_stages(make, 16, {16, 32, 64}, {n, n, n}, "shortcut");
  fc_ = make.linear("fc", 64, options.num_classes, true, make.low_precision() ? 0.01 : 0.0);
}

at::Tensor ResNetCifar::forward(const nn::Context& ctx, const at::Tensor& x) const {
  at::Tensor out = stem_norm_->forward(ctx, stem_conv_->forward(ctx, nn::nodes_to_channels(x)));
  for (const BasicBlock& block : blocks_) out = block.forward(ctx, out);
  // Global average pool (the reference's AvgPool2d(8) on 8x8 maps; any input size here).
  nn::trace_inline_op(ctx, TracedOp::kAveragePool, "avgpool", out);
  const at::Tensor pooled = out.mean({2, 3});  // [b, k*64]
  return fc_->forward(ctx, nn::channels_to_nodes(pooled.unsqueeze(-1).unsqueeze(-1), ctx.k));
}

}  // namespace lpdt::models
