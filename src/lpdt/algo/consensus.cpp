#include "lpdt/algo/consensus.h"

#include <cmath>

#include "lpdt/core/error.h"

namespace lpdt::algo {

double consensus_distance(const at::Tensor& x) {
  LPDT_CHECK(x.dim() == 2 && x.size(0) > 0, "consensus_distance: x must be [n, P]");
  const at::Tensor xd = x.to(at::kDouble);
  return (xd - xd.mean(0, /*keepdim=*/true)).pow(2).sum(1).mean().item<double>();
}

std::vector<LayerConsensus> layer_consensus(const at::Tensor& x, const LayerLayout& layout) {
  LPDT_CHECK(x.dim() == 2 && x.size(0) > 0 && x.size(1) == layout.total_numel,
             "layer_consensus: x must be [n, P] with P the layout's total_numel");
  const at::Tensor xd = x.detach().to(at::kDouble).cpu();
  const at::Tensor mean = xd.mean(0, /*keepdim=*/true);  // [1, P]
  // Per column: sum over nodes of the squared deviation, then the per-node squares; one pass
  // each over [n, P], then segment sums of [P]-vectors.
  const at::Tensor deviation_sq = (xd - mean).pow(2).mean(0);  // [P]: mean_i (x_i - x_bar)^2
  const at::Tensor node_sq = xd.pow(2);                        // [n, P]
  const at::Tensor mean_sq = mean.squeeze(0).pow(2);           // [P]
  std::vector<LayerConsensus> layers;
  layers.reserve(layout.segments.size());
  for (const LayerSegment& segment : layout.segments) {
    LayerConsensus layer;
    layer.name = segment.name;
    layer.numel = segment.numel;
    layer.distance = deviation_sq.narrow(0, segment.offset, segment.numel).sum().item<double>();
    layer.mean_node_norm =
        node_sq.narrow(1, segment.offset, segment.numel).sum(1).sqrt().mean().item<double>();
    layer.average_norm =
        std::sqrt(mean_sq.narrow(0, segment.offset, segment.numel).sum().item<double>());
    layer.relative_distance =
        layer.mean_node_norm > 0 ? std::sqrt(layer.distance) / layer.mean_node_norm : 0.0;
    layers.push_back(std::move(layer));
  }
  return layers;
}

}  // namespace lpdt::algo
