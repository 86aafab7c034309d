#include "lpdt/models/resnet_imagenet.h"

#include "lpdt/core/error.h"
#include "lpdt/nn/layer_factory.h"
#include "lpdt/nn/node_layout.h"
#include "lpdt/nn/tracing_layer.h"

namespace lpdt::models {

ResNetImageNet::ResNetImageNet(const ModelOptions& options, std::int64_t depth) {
  // He et al. 2016, table 1: BasicBlocks per stage.
  std::vector<std::int64_t> blocks_per_stage;
  if (depth == 18) {
    blocks_per_stage = {2, 2, 2, 2};
  } else if (depth == 34) {
    blocks_per_stage = {3, 4, 6, 3};
  } else {
    throw ConfigError("ImageNet-style ResNet depth " + std::to_string(depth) +
                      " is not supported: expected 18 (model.arch = 'resnet18') or 34 "
                      "(model.arch = 'resnet34')");
  }
  name_ = "resnet" + std::to_string(depth);
  const nn::LayerFactory make(registry_, nn::parse_norm_kind(options.norm), options.groups,
                              options.quant, options.residual_init);
  if (make.low_precision()) name_ += "-int8";
  const bool relu = make.norm_needs_relu();
  using nn::Conv2dOptions;
  stem_conv_ = make.conv("conv1", Conv2dOptions{options.in_channels, 64, 7}
                                      .with_stride(2)
                                      .with_padding(3));
  stem_norm_ = make.norm("bn1", 64, relu);
  blocks_ = basic_block_stages(make, 64, {64, 128, 256, 512}, blocks_per_stage, "downsample");
  fc_ = make.linear("fc", 512, options.num_classes, true, make.low_precision() ? 0.01 : 0.0);
}

at::Tensor ResNetImageNet::forward(const nn::Context& ctx, const at::Tensor& x) const {
  at::Tensor out = stem_norm_->forward(ctx, stem_conv_->forward(ctx, nn::nodes_to_channels(x)));
  // 3x3/2 max pool with padding 1: pools never straddle channels, so nodes stay apart.
  nn::trace_inline_op(ctx, TracedOp::kMaxPool, "maxpool", out, 3, 2);
  out = at::max_pool2d(out, {3, 3}, {2, 2}, {1, 1});
  for (const BasicBlock& block : blocks_) out = block.forward(ctx, out);
  nn::trace_inline_op(ctx, TracedOp::kAveragePool, "avgpool", out);
  const at::Tensor pooled = out.mean({2, 3});  // [b, k*512]
  return fc_->forward(ctx, nn::channels_to_nodes(pooled.unsqueeze(-1).unsqueeze(-1), ctx.k));
}

}  // namespace lpdt::models
