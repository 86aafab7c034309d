#pragma once
// Range-based normalisers (Range BatchNorm, Range EvoNorm) divide by a range: s = 1 / (range * f
// + 1e-5). A channel whose values are all equal (range 0: a channel ReLU zeroed) or a Range
// EvoNorm group whose every chunk holds one value (as the tied 8-bit codes of a tiny feature map
// can) gets s = 1e5 in the official code. In 8-bit models
// each node's scales are quantized with one range, so that one 1e5 entry makes the step 1e5 / 255
// and rounds every other scale of the node (about 1) to 0 or 392; in Range EvoNorm the flat
// group's own output x * hsig(v x) * 1e5 is 1e5 times its input as well. lpdt departs from the
// reference here (docs/quantization.md): a flat entry takes the largest scale of its node's other
// entries (1 if every entry is flat), a constant that no gradient reaches.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace lpdt::nn {

// A scale at least this large, s = 1 / (range * f + 1e-5) >= 1 / (2e-5), has range * f <= 1e-5:
// the epsilon, not the data, sets it. Such an entry counts as flat. In 8-bit models a range is at
// least one step of its input's codes, far above 1e-5, unless it is 0.
constexpr double kFlatRangeScale = 0.5 / 1e-5;

// scale, flat (bool): the same shape, nodes along `node_dim` -> scale with each flat entry set to
// the largest non-flat scale of its node (1 if none), detached; gradients flow to the others.
at::Tensor flat_entries_take_largest_scale(const at::Tensor& scale, const at::Tensor& flat,
                                           std::int64_t node_dim);

// Range EvoNorm's group scales s [b, k, G] as its fused operations compute them -> `forward`:
// s with its flat groups (s >= kFlatRangeScale) replaced as above, for the output; `backward`: s
// with those groups 0, for the range statistic's gradient -ds s^2 f, which a replaced scale does
// not have. Either may be s itself when no group is flat.
struct SettledGroupScales {
  at::Tensor forward;
  at::Tensor backward;
};
SettledGroupScales settle_flat_group_scales(const at::Tensor& s);

}  // namespace lpdt::nn
