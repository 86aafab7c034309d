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
  const std::int64_t n = (options.depth - 2) / 6;
  name_ = "resnet" + std::to_string(options.depth);
  const nn::LayerFactory make(registry_, nn::parse_norm_kind(options.norm), options.groups,
                              options.quant);
  if (make.low_precision()) name_ += "-int8";
  // With EvoNorm the reference has no activation after the residual add; BN/GN use ReLU.
  const bool relu = make.norm_needs_relu();
  relu_after_add_ = relu;
  using nn::Conv2dOptions;
  stem_conv_ = make.conv("conv1", Conv2dOptions{options.in_channels, 16, 3}.with_padding(1));
  stem_norm_ = make.norm("bn1", 16, relu);
  std::int64_t in = 16;
  const std::int64_t widths[3] = {16, 32, 64};
  for (int stage = 0; stage < 3; ++stage) {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t out = widths[stage];
      const std::int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      const std::string prefix = "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      BasicBlock block;
      block.conv1 = make.conv(prefix + ".conv1",
                              Conv2dOptions{in, out, 3}.with_stride(stride).with_padding(1));
      block.norm1 = make.norm(prefix + ".bn1", out, relu);
      block.conv2 = make.conv(prefix + ".conv2", Conv2dOptions{out, out, 3}.with_padding(1));
      // The reference's 8-bit ResNet zero-initialises the residual branch's last gamma.
      block.norm2 = make.norm(prefix + ".bn2", out, false, /*zero_gamma=*/make.low_precision());
      if (stride != 1 || in != out) {
        block.shortcut_conv =
            make.conv(prefix + ".shortcut.0", Conv2dOptions{in, out, 1}.with_stride(stride));
        block.shortcut_norm = make.norm(prefix + ".shortcut.1", out, false);
      }
      block.add.emplace(make.residual_add(prefix + ".add"));
      blocks_.push_back(std::move(block));
      in = out;
    }
  }
  fc_ = make.linear("fc", 64, options.num_classes, true, make.low_precision() ? 0.01 : 0.0);
}

at::Tensor ResNetCifar::forward(const nn::Context& ctx, const at::Tensor& x) const {
  at::Tensor out = stem_norm_->forward(ctx, stem_conv_->forward(ctx, nn::nodes_to_channels(x)));
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
  // Global average pool (the reference's AvgPool2d(8) on 8x8 maps; any input size here).
  nn::trace_inline_op(ctx, TracedOp::kAveragePool, "avgpool", out);
  const at::Tensor pooled = out.mean({2, 3});  // [b, k*64]
  return fc_->forward(ctx, nn::channels_to_nodes(pooled.unsqueeze(-1).unsqueeze(-1), ctx.k));
}

}  // namespace lpdt::models
