#include "lpdt/models/vgg.h"

#include "lpdt/core/error.h"
#include "lpdt/nn/layer_factory.h"
#include "lpdt/nn/max_pool_2x2.h"
#include "lpdt/nn/node_layout.h"
#include "lpdt/nn/tracing_layer.h"

namespace lpdt::models {

Vgg11::Vgg11(const ModelOptions& options) {
  if (options.height < 32 || options.width < 32) {
    throw ConfigError(
        "model.arch = 'vgg11' needs inputs of at least 32x32 (five 2x2 pools); got " +
        std::to_string(options.height) + "x" + std::to_string(options.width) +
        ": set data.pad_to = 32 for 28x28 datasets (lpdt bench: --size 32)");
  }
  const nn::LayerFactory make(registry_, nn::parse_norm_kind(options.norm), options.groups,
                              options.quant);
  name_ = make.low_precision() ? "vgg11-int8" : "vgg11";
  const bool relu = make.norm_needs_relu();
  constexpr std::int64_t kPool = 0;
  const std::int64_t cfg[] = {64,  kPool, 128,   kPool, 256, 256,  kPool,
                              512, 512,   kPool, 512,   512, kPool};
  std::int64_t in = options.in_channels;
  int index = 0;
  for (std::int64_t width : cfg) {
    Stage stage;
    if (width == kPool) {
      stage.pool = true;
    } else {
      const std::string prefix = "features." + std::to_string(index);
      // The reference's 8-bit VGG convolutions have no bias.
      stage.conv = make.conv(
          prefix + ".conv",
          nn::Conv2dOptions{in, width, 3}.with_padding(1).with_bias(!make.low_precision()));
      stage.norm = make.norm(prefix + ".norm", width, relu);
      in = width;
    }
    ++index;
    stages_.push_back(std::move(stage));
  }
  fc1_ = make.linear("classifier.1", 512, 512);
  fc2_ = make.linear("classifier.3", 512, options.num_classes);
}

at::Tensor Vgg11::forward(const nn::Context& ctx, const at::Tensor& x) const {
  at::Tensor out = nn::nodes_to_channels(x);
  for (const Stage& stage : stages_) {
    if (stage.pool) {
      nn::trace_inline_op(ctx, TracedOp::kMaxPool, "maxpool", out, 2);
      out = nn::max_pool_2x2(out);
    } else {
      out = stage.norm->forward(ctx, stage.conv->forward(ctx, out));
    }
  }
  if (out.size(2) * out.size(3) > 1) nn::trace_inline_op(ctx, TracedOp::kAveragePool, "avgpool", out);
  // Inputs larger than 32x32 leave a map bigger than 1x1: average it (the reference uses
  // AvgPool2d(7) on Imagenette's 7x7 maps).
  at::Tensor features = nn::channels_to_nodes(out.mean({2, 3}, true), ctx.k);  // [k, b, 512]
  features = at::dropout(features, 0.5, ctx.training);
  return fc2_->forward(ctx, at::relu(fc1_->forward(ctx, features)));
}

}  // namespace lpdt::models
