#include "lpdt/nn/flat_group_scales.h"

#include <ATen/ATen.h>

#include <vector>

namespace lpdt::nn {

at::Tensor flat_entries_take_largest_scale(const at::Tensor& scale, const at::Tensor& flat,
                                           std::int64_t node_dim) {
  std::vector<std::int64_t> other_dims;
  for (std::int64_t d = 0; d < scale.dim(); ++d) {
    if (d != node_dim) other_dims.push_back(d);
  }
  at::Tensor largest = scale.detach().masked_fill(flat, 0);
  if (!other_dims.empty()) largest = largest.amax(other_dims, /*keepdim=*/true);
  largest = at::where(largest.gt(0), largest, at::ones_like(largest));  // every entry flat
  return at::where(flat, largest.expand_as(scale), scale);
}

SettledGroupScales settle_flat_group_scales(const at::Tensor& s) {
  const at::Tensor flat = s.ge(kFlatRangeScale);
  // On the CPU the common case (no flat group) costs one scan; on a GPU the answer would be a
  // host synchronisation inside the step, so the replacement always runs there.
  if (s.is_cpu() && !flat.any().item<bool>()) return {s, s};
  return {flat_entries_take_largest_scale(s, flat, /*node_dim=*/1), s.masked_fill(flat, 0)};
}

}  // namespace lpdt::nn
