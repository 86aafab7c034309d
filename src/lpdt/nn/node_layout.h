#pragma once
// Conversions between the user-facing node-batched layout and the layouts layers use.
#include <ATen/ATen.h>

#include <vector>

namespace lpdt::nn {

// [k, b, C, H, W] -> [b, k*C, H, W] (node-major channels; see module.h), stored channels-last
at::Tensor nodes_to_channels(const at::Tensor& x);
// [b, k*C, H, W] -> [k, b, C*H*W]
at::Tensor channels_to_nodes(const at::Tensor& x, std::int64_t k);

// Per-sample statistics over groups of consecutive channels without leaving the tensor's memory
// layout. x: [b, groups*M, H, W] (any memory format) -> a view shaped
// [b, groups, M*H*W] (contiguous NCHW) or [b, H*W, groups, M] (channels-last); reduce over
// `group_reduce_dims(x)`.
at::Tensor group_view(const at::Tensor& x, std::int64_t groups);
std::vector<std::int64_t> group_reduce_dims(const at::Tensor& x);
// The statistics (keepdim) broadcast back over group_view(x) and reshaped to x's shape.
at::Tensor ungroup(const at::Tensor& grouped, const at::Tensor& like);
bool is_channels_last(const at::Tensor& x);

}  // namespace lpdt::nn
