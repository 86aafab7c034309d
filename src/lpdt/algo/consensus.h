#pragma once
// Consensus distance: how far the nodes' models are from their average, whole and per layer.
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lpdt/core/layer_layout.h"

namespace lpdt::algo {

// Both functions below convert to float64 a block of columns at a time, at most this many
// values (32 MiB): the whole [n, P] at once took 1.2 GB more memory and 1.6 s per evaluation at
// 1,024 LeNet-5 nodes (docs/benchmarks.md, "Scaling with the node count", 2026-11-29).
inline constexpr std::int64_t kConsensusBlockValues = std::int64_t{1} << 22;

// mean_i ||x_i - x_bar||^2 with x_bar = mean_i x_i; x: [n, P] (de-biased parameters). Computed in
// float64, `block_values` values at a time (tests set it small). (Lives in algo/ for now;
// metrics/ may take it over.)
double consensus_distance(const at::Tensor& x, std::int64_t block_values = kConsensusBlockValues);

// One parameter tensor's share of the consensus distance, and the sizes that explain it: a layer
// whose weights grow (mean_node_norm) disagrees more in absolute terms even when its nodes'
// directions agree, which relative_distance separates from real disagreement.
struct LayerConsensus {
  std::string name;              // the layout segment, e.g. "layer1.0.conv1.weight"
  std::int64_t numel = 0;        // scalars per node
  double distance = 0;           // mean_i ||x_i,s - x_bar_s||^2: the layers' sum is the whole
  double mean_node_norm = 0;     // mean_i ||x_i,s||
  double average_norm = 0;       // ||x_bar_s||
  double relative_distance = 0;  // sqrt(distance) / mean_node_norm (0 when the norm is 0)
};

// Per segment of `layout`, in layout order. x: [n, P] with P = layout.total_numel, any float
// dtype and device; computed in float64, `block_values` values at a time.
std::vector<LayerConsensus> layer_consensus(const at::Tensor& x, const LayerLayout& layout,
                                            std::int64_t block_values = kConsensusBlockValues);

}  // namespace lpdt::algo
