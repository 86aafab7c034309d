#include "lpdt/models/basic_block.h"

namespace lpdt::models {

BasicBlock::BasicBlock(const nn::LayerFactory& make, const std::string& prefix, std::int64_t in,
                       std::int64_t out, std::int64_t stride, const std::string& shortcut_name)
    : relu_after_add_(make.norm_needs_relu()) {
  using nn::Conv2dOptions;
  const bool relu = make.norm_needs_relu();
  conv1_ = make.conv(prefix + ".conv1",
                     Conv2dOptions{in, out, 3}.with_stride(stride).with_padding(1));
  norm1_ = make.norm(prefix + ".bn1", out, relu);
  conv2_ = make.conv(prefix + ".conv2", Conv2dOptions{out, out, 3}.with_padding(1));
  norm2_ = make.norm(prefix + ".bn2", out, false, /*zero_gamma=*/make.zero_residual_gamma());
  if (stride != 1 || in != out) {
    shortcut_conv_ = make.conv(prefix + "." + shortcut_name + ".0",
                               Conv2dOptions{in, out, 1}.with_stride(stride));
    shortcut_norm_ = make.norm(prefix + "." + shortcut_name + ".1", out, false);
  }
  add_.emplace(make.residual_add(prefix + ".add"));
}

at::Tensor BasicBlock::forward(const nn::Context& ctx, const at::Tensor& x) const {
  at::Tensor y = norm1_->forward(ctx, conv1_->forward(ctx, x));
  y = norm2_->forward(ctx, conv2_->forward(ctx, y));
  const at::Tensor residual =
      shortcut_conv_ ? shortcut_norm_->forward(ctx, shortcut_conv_->forward(ctx, x)) : x;
  const at::Tensor out = add_->forward(ctx, residual, y);
  return relu_after_add_ ? at::relu(out) : out;
}

std::vector<BasicBlock> basic_block_stages(const nn::LayerFactory& make, std::int64_t in,
                                           const std::vector<std::int64_t>& widths,
                                           const std::vector<std::int64_t>& blocks_per_stage,
                                           const std::string& shortcut_name) {
  std::vector<BasicBlock> blocks;
  for (std::size_t stage = 0; stage < widths.size(); ++stage) {
    for (std::int64_t i = 0; i < blocks_per_stage[stage]; ++i) {
      const std::int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      blocks.emplace_back(make, "layer" + std::to_string(stage + 1) + "." + std::to_string(i), in,
                          widths[stage], stride, shortcut_name);
      in = widths[stage];
    }
  }
  return blocks;
}

}  // namespace lpdt::models
