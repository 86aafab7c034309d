#include "lpdt/nn/node_layout.h"

namespace lpdt::nn {

at::Tensor nodes_to_channels(const at::Tensor& x) {
  const auto k = x.size(0), b = x.size(1), c = x.size(2), h = x.size(3), w = x.size(4);
  // Channels-last (NHWC) storage: oneDNN's convolutions then run without reordering activations
  // to and from their blocked layout at every layer (measured 1.6-2x faster; docs/benchmarks.md).
  // Explicit channels-last strides: a one-channel tensor counts as channels-last contiguous with
  // NCHW strides, and then every layer after it would follow NCHW (measured 787 -> 901 img/s for
  // 8 ResNet-20 nodes on Fashion-MNIST's one-channel inputs; docs/benchmarks.md).
  const at::Tensor grouped = x.transpose(0, 1).reshape({b, k * c, h, w});
  at::Tensor out = at::empty({b, k * c, h, w},
                             grouped.options().memory_format(at::MemoryFormat::ChannelsLast));
  return out.copy_(grouped);
}

at::Tensor channels_to_nodes(const at::Tensor& x, std::int64_t k) {
  const auto b = x.size(0);
  return x.reshape({b, k, -1}).transpose(0, 1);
}

bool is_channels_last(const at::Tensor& x) {
  return x.dim() == 4 && !x.is_contiguous() && x.is_contiguous(at::MemoryFormat::ChannelsLast);
}

at::Tensor group_view(const at::Tensor& x, std::int64_t groups) {
  const auto b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  if (is_channels_last(x)) {
    // Physical order [b, H, W, C]: a permute back to it is a free view.
    return x.permute({0, 2, 3, 1}).view({b, h * w, groups, c / groups});
  }
  return x.reshape({b, groups, (c / groups) * h * w});
}

std::vector<std::int64_t> group_reduce_dims(const at::Tensor& x) {
  if (is_channels_last(x)) return {1, 3};
  return {2};
}

at::Tensor ungroup(const at::Tensor& grouped, const at::Tensor& like) {
  const auto b = like.size(0), c = like.size(1), h = like.size(2), w = like.size(3);
  if (grouped.dim() == 4) {  // channels-last view [b, H*W, G, M]
    return grouped.view({b, h, w, c}).permute({0, 3, 1, 2});
  }
  return grouped.view({b, c, h, w});
}

}  // namespace lpdt::nn
