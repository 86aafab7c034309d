#include "lpdt/models/mobilenet_v2.h"

#include <iterator>
#include <string>

#include "lpdt/core/error.h"
#include "lpdt/nn/layer_factory.h"
#include "lpdt/nn/node_layout.h"
#include "lpdt/nn/tracing_layer.h"

namespace lpdt::models {
namespace {

// One row of Sandler et al. 2018, table 2: expansion t, output channels c, repeats n, stride s
// of the first repeat.
struct BlockGroup {
  std::int64_t expansion, channels, repeats, stride;
};
constexpr BlockGroup kGroups[] = {{1, 16, 1, 1},  {6, 24, 2, 2},  {6, 32, 3, 2},  {6, 64, 4, 2},
                                  {6, 96, 3, 1},  {6, 160, 3, 2}, {6, 320, 1, 1}};
constexpr std::int64_t kStemChannels = 32;
constexpr std::int64_t kHeadChannels = 1280;
// The CIFAR adaptation applies up to this input height (see mobilenet_v2.h).
constexpr std::int64_t kCifarMaxHeight = 32;

}  // namespace

MobileNetV2::MobileNetV2(const ModelOptions& options) {
  const nn::LayerFactory make(registry_, nn::parse_norm_kind(options.norm), options.groups,
                              options.quant, options.residual_init);
  name_ = make.low_precision() ? "mobilenetv2-int8" : "mobilenetv2";
  relu6_ = make.norm_needs_relu();
  const bool cifar = options.height <= kCifarMaxHeight;
  using nn::Conv2dOptions;
  // Norms never apply a ReLU themselves: activation() adds ReLU6 where it belongs.
  stem_conv_ = make.conv("features.0.0", Conv2dOptions{options.in_channels, kStemChannels, 3}
                                             .with_stride(cifar ? 1 : 2)
                                             .with_padding(1));
  stem_norm_ = make.norm("features.0.1", kStemChannels, false);
  std::int64_t in = kStemChannels;
  int index = 1;  // torchvision's features.<index> numbering
  for (std::size_t g = 0; g < std::size(kGroups); ++g) {
    const BlockGroup& group = kGroups[g];
    for (std::int64_t i = 0; i < group.repeats; ++i) {
      std::int64_t stride = i == 0 ? group.stride : 1;
      if (cifar && g == 1) stride = 1;  // the CIFAR adaptation's second stride
      const std::int64_t hidden = in * group.expansion, out = group.channels;
      const std::string prefix = "features." + std::to_string(index++) + ".conv";
      InvertedResidual block;
      int layer = 0;
      const auto next = [&]() { return prefix + "." + std::to_string(layer++); };
      if (group.expansion != 1) {
        block.expand_conv = make.conv(next(), Conv2dOptions{in, hidden, 1});
        block.expand_norm = make.norm(next(), hidden, false);
      }
      block.depthwise_conv = make.conv(next(), Conv2dOptions{hidden, hidden, 3}
                                                   .with_stride(stride)
                                                   .with_padding(1)
                                                   .with_groups(hidden));
      block.depthwise_norm = make.norm(next(), hidden, false);
      const bool residual = stride == 1 && in == out;
      block.project_conv = make.conv(next(), Conv2dOptions{hidden, out, 1});
      block.project_norm =
          make.norm(next(), out, false, /*zero_gamma=*/residual && make.zero_residual_gamma());
      if (residual) block.add.emplace(make.residual_add(prefix + ".add"));
      blocks_.push_back(std::move(block));
      in = out;
    }
  }
  const std::string head = "features." + std::to_string(index);
  head_conv_ = make.conv(head + ".0", Conv2dOptions{in, kHeadChannels, 1});
  head_norm_ = make.norm(head + ".1", kHeadChannels, false);
  fc_ = make.linear("classifier.1", kHeadChannels, options.num_classes, true, 0.01);
}

at::Tensor MobileNetV2::activation(const at::Tensor& x) const {
  return relu6_ ? at::hardtanh(x, 0.0, 6.0) : x;
}

at::Tensor MobileNetV2::forward(const nn::Context& ctx, const at::Tensor& x) const {
  at::Tensor out = activation(
      stem_norm_->forward(ctx, stem_conv_->forward(ctx, nn::nodes_to_channels(x))));
  for (const InvertedResidual& block : blocks_) {
    at::Tensor y = out;
    if (block.expand_conv) {
      y = activation(block.expand_norm->forward(ctx, block.expand_conv->forward(ctx, y)));
    }
    y = activation(block.depthwise_norm->forward(ctx, block.depthwise_conv->forward(ctx, y)));
    y = block.project_norm->forward(ctx, block.project_conv->forward(ctx, y));
    out = block.add ? block.add->forward(ctx, out, y) : y;
  }
  out = activation(head_norm_->forward(ctx, head_conv_->forward(ctx, out)));
  nn::trace_inline_op(ctx, TracedOp::kAveragePool, "avgpool", out);
  const at::Tensor pooled = out.mean({2, 3});  // [b, k*1280]
  return fc_->forward(ctx, nn::channels_to_nodes(pooled.unsqueeze(-1).unsqueeze(-1), ctx.k));
}

}  // namespace lpdt::models
