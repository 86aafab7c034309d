#pragma once
// Consensus distance: how far the nodes' models are from their average, whole and per layer.
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lpdt/core/layer_layout.h"

namespace lpdt::algo {

// mean_i ||x_i - x_bar||^2 with x_bar = mean_i x_i; x: [n, P] (de-biased parameters). Computed in
// float64. (Lives in algo/ for now; metrics/ may take it over.)
double consensus_distance(const at::Tensor& x);

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
// dtype and device; computed in float64.
std::vector<LayerConsensus> layer_consensus(const at::Tensor& x, const LayerLayout& layout);

}  // namespace lpdt::algo
