#include "lpdt/models/lenet.h"

#include "lpdt/core/error.h"
#include "lpdt/nn/layer_factory.h"
#include "lpdt/nn/max_pool_2x2.h"
#include "lpdt/nn/node_layout.h"
#include "lpdt/nn/tracing_layer.h"

namespace lpdt::models {

LeNet5::LeNet5(const ModelOptions& options) {
  if (options.height < 12 || options.width < 12) {
    throw ConfigError("model.arch = 'lenet5' needs inputs of at least 12x12; got " +
                      std::to_string(options.height) + "x" + std::to_string(options.width));
  }
  const nn::LayerFactory make(registry_, nn::NormKind::kNone, 1, options.quant);
  name_ = make.low_precision() ? "lenet5-int8" : "lenet5";
  conv1_ = make.conv("conv1",
                     nn::Conv2dOptions{options.in_channels, 6, 5}.with_padding(2).with_bias(true));
  conv2_ = make.conv("conv2", nn::Conv2dOptions{6, 16, 5}.with_bias(true));
  const std::int64_t h = (options.height / 2 - 4) / 2, w = (options.width / 2 - 4) / 2;
  fc1_ = make.linear("fc1", 16 * h * w, 120);
  fc2_ = make.linear("fc2", 120, 84);
  fc3_ = make.linear("fc3", 84, options.num_classes);
}

at::Tensor LeNet5::forward(const nn::Context& ctx, const at::Tensor& x) const {
  at::Tensor out = nn::nodes_to_channels(x);
  out = at::relu(conv1_->forward(ctx, out));
  nn::trace_inline_op(ctx, TracedOp::kMaxPool, "pool1", out, 2);
  out = nn::max_pool_2x2(out);
  out = at::relu(conv2_->forward(ctx, out));
  nn::trace_inline_op(ctx, TracedOp::kMaxPool, "pool2", out, 2);
  out = nn::max_pool_2x2(out);
  at::Tensor features = nn::channels_to_nodes(out, ctx.k);  // [k, b, 16*h*w]
  features = at::relu(fc1_->forward(ctx, features));
  features = at::relu(fc2_->forward(ctx, features));
  return fc3_->forward(ctx, features);
}

Mlp::Mlp(const ModelOptions& options) {
  const std::int64_t in = options.in_channels * options.height * options.width;
  const nn::LayerFactory make(registry_, nn::NormKind::kNone, 1, options.quant);
  name_ = make.low_precision() ? "mlp-int8" : "mlp";
  fc1_ = make.linear("fc1", in, 200);
  fc2_ = make.linear("fc2", 200, 200);
  fc3_ = make.linear("fc3", 200, options.num_classes);
}

at::Tensor Mlp::forward(const nn::Context& ctx, const at::Tensor& x) const {
  at::Tensor features = x.reshape({x.size(0), x.size(1), -1});  // [k, b, C*H*W]
  features = at::relu(fc1_->forward(ctx, features));
  features = at::relu(fc2_->forward(ctx, features));
  return fc3_->forward(ctx, features);
}

}  // namespace lpdt::models
