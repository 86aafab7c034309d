#pragma once
// Conversions between the user-facing node-batched layout and the layouts layers use.
#include <ATen/ATen.h>

namespace lpdt::nn {

// [k, b, C, H, W] -> [b, k*C, H, W] (node-major channels; see module.h)
at::Tensor nodes_to_channels(const at::Tensor& x);
// [b, k*C, H, W] -> [k, b, C*H*W]
at::Tensor channels_to_nodes(const at::Tensor& x, std::int64_t k);

}  // namespace lpdt::nn
