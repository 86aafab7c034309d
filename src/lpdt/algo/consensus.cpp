#include "lpdt/algo/consensus.h"

#include <algorithm>
#include <cmath>

#include "lpdt/core/error.h"

namespace lpdt::algo {

namespace {

// Columns [begin, end) of x in blocks of at most `block_values` values: f(first column, the
// block as float64 [n, width]).
template <typename F>
void for_each_block(const at::Tensor& x, std::int64_t begin, std::int64_t end,
                    std::int64_t block_values, F f) {
  const std::int64_t width = std::max<std::int64_t>(1, block_values / std::max<std::int64_t>(1, x.size(0)));
  for (std::int64_t c = begin; c < end; c += width) {
    f(c, x.narrow(1, c, std::min(width, end - c)).to(at::kDouble));
  }
}

}  // namespace

double consensus_distance(const at::Tensor& x, std::int64_t block_values) {
  LPDT_CHECK(x.dim() == 2 && x.size(0) > 0, "consensus_distance: x must be [n, P]");
  LPDT_CHECK(block_values > 0, "consensus_distance: block_values must be positive");
  // Each node's squared distance, summed over the blocks' columns.
  at::Tensor per_node = at::zeros({x.size(0)}, x.options().dtype(at::kDouble));
  for_each_block(x, 0, x.size(1), block_values, [&](std::int64_t, const at::Tensor& xd) {
    per_node.add_((xd - xd.mean(0, /*keepdim=*/true)).pow(2).sum(1));
  });
  return per_node.mean().item<double>();
}

std::vector<LayerConsensus> layer_consensus(const at::Tensor& x, const LayerLayout& layout,
                                            std::int64_t block_values) {
  LPDT_CHECK(x.dim() == 2 && x.size(0) > 0 && x.size(1) == layout.total_numel,
             "layer_consensus: x must be [n, P] with P the layout's total_numel");
  LPDT_CHECK(block_values > 0, "layer_consensus: block_values must be positive");
  const at::Tensor xs = x.detach();
  std::vector<LayerConsensus> layers;
  layers.reserve(layout.segments.size());
  for (const LayerSegment& segment : layout.segments) {
    // Over the segment's columns: sum_c mean_i (x_ic - x_bar_c)^2, each node's sum_c x_ic^2, and
    // sum_c x_bar_c^2.
    double distance = 0;
    double mean_sq = 0;
    at::Tensor node_sq = at::zeros({x.size(0)}, xs.options().dtype(at::kDouble));
    for_each_block(xs, segment.offset, segment.offset + segment.numel, block_values,
                   [&](std::int64_t, const at::Tensor& xd) {
                     const at::Tensor mean = xd.mean(0, /*keepdim=*/true);  // [1, width]
                     distance += (xd - mean).pow(2).mean(0).sum().item<double>();
                     node_sq.add_(xd.pow(2).sum(1));
                     mean_sq += mean.pow(2).sum().item<double>();
                   });
    LayerConsensus layer;
    layer.name = segment.name;
    layer.numel = segment.numel;
    layer.distance = distance;
    layer.mean_node_norm = node_sq.sqrt().mean().item<double>();
    layer.average_norm = std::sqrt(mean_sq);
    // NaN parameters give NaN, not the 0 of a layer whose weights are all zero.
    layer.relative_distance =
        layer.mean_node_norm > 0 || !std::isfinite(layer.mean_node_norm)
            ? std::sqrt(layer.distance) / layer.mean_node_norm
            : 0.0;
    layers.push_back(std::move(layer));
  }
  return layers;
}

}  // namespace lpdt::algo
