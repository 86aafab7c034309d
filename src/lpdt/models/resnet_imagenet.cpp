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
                              options.quant);
  if (make.low_precision()) name_ += "-int8";
  const bool relu = make.norm_needs_relu();
  relu_after_add_ = relu;
  using nn::Conv2dOptions;
  stem_conv_ = make.conv("conv1", Conv2dOptions{options.in_channels, 64, 7}
                                      .with_stride(2)
                                      .with_padding(3));
  stem_norm_ = make.norm("bn1", 64, relu);
  std::int64_t in = 64;
  const std::int64_t widths[4] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    for (std::int64_t i = 0; i < blocks_per_stage[stage]; ++i) {
      const std::int64_t out = widths[stage];
      const std::int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      const std::string prefix = "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      BasicBlock block;
      block.conv1 = make.conv(prefix + ".conv1",
                              Conv2dOptions{in, out, 3}.with_stride(stride).with_padding(1));
      block.norm1 = make.norm(prefix + ".bn1", out, relu);
      block.conv2 = make.conv(prefix + ".conv2", Conv2dOptions{out, out, 3}.with_padding(1));
      // Zero-initialised residual branch at 8 bits, as the reference's 8-bit ResNets.
      block.norm2 = make.norm(prefix + ".bn2", out, false, /*zero_gamma=*/make.low_precision());
      if (stride != 1 || in != out) {
        block.shortcut_conv =
            make.conv(prefix + ".downsample.0", Conv2dOptions{in, out, 1}.with_stride(stride));
        block.shortcut_norm = make.norm(prefix + ".downsample.1", out, false);
      }
      block.add.emplace(make.residual_add(prefix + ".add"));
      blocks_.push_back(std::move(block));
      in = out;
    }
  }
  fc_ = make.linear("fc", 512, options.num_classes, true, make.low_precision() ? 0.01 : 0.0);
}

at::Tensor ResNetImageNet::forward(const nn::Context& ctx, const at::Tensor& x) const {
  at::Tensor out = stem_norm_->forward(ctx, stem_conv_->forward(ctx, nn::nodes_to_channels(x)));
  // 3x3/2 max pool with padding 1: pools never straddle channels, so nodes stay apart.
  nn::trace_inline_op(ctx, TracedOp::kMaxPool, "maxpool", out, 3, 2);
  out = at::max_pool2d(out, {3, 3}, {2, 2}, {1, 1});
  for (const BasicBlock& block : blocks_) {
    at::Tensor y = block.norm1->forward(ctx, block.conv1->forward(ctx, out));
    y = block.norm2->forward(ctx, block.conv2->forward(ctx, y));
    at::Tensor residual = out;
    if (block.shortcut_conv) {
      residual = block.shortcut_norm->forward(ctx, block.shortcut_conv->forward(ctx, out));
    }
    out = block.add->forward(ctx, residual, y);
    if (relu_after_add_) out = at::relu(out);
  }
  nn::trace_inline_op(ctx, TracedOp::kAveragePool, "avgpool", out);
  const at::Tensor pooled = out.mean({2, 3});  // [b, k*512]
  return fc_->forward(ctx, nn::channels_to_nodes(pooled.unsqueeze(-1).unsqueeze(-1), ctx.k));
}

}  // namespace lpdt::models
