#pragma once
// Small mixing matrices for the algorithm tests (W[i][j]: weight of edge j -> i,
// column-stochastic).
#include <torch/types.h>

#include <vector>

#include "lpdt/core/layer_layout.h"

namespace lpdt::algo::testing {

// Directed, irregular, strongly connected; node j keeps and sends 1/(out_j + 1). Column- but not
// row-stochastic, so push-sum weights move away from 1.
inline torch::Tensor irregular_directed() {
  const std::vector<std::vector<std::int64_t>> out = {{1, 2, 3}, {2, 3}, {3, 0}, {4}, {0}};
  auto w = torch::zeros({5, 5});
  for (std::int64_t j = 0; j < 5; ++j) {
    const float share = 1.0f / static_cast<float>(out[j].size() + 1);
    w[j][j] = share;
    for (auto i : out[j]) w[i][j] = share;
  }
  return w;
}

// The official graph: directed ring r -> r + 1, weights 1/2 (doubly stochastic).
inline torch::Tensor directed_ring(std::int64_t n) {
  auto w = torch::zeros({n, n});
  for (std::int64_t j = 0; j < n; ++j) {
    w[j][j] = 0.5;
    w[(j + 1) % n][j] = 0.5;
  }
  return w;
}

// Undirected ring, weight 1/3 to self and each neighbour (symmetric, doubly stochastic).
inline torch::Tensor undirected_ring(std::int64_t n) {
  auto w = torch::zeros({n, n});
  for (std::int64_t j = 0; j < n; ++j) {
    w[j][j] += 1.0 / 3;
    w[(j + 1) % n][j] += 1.0 / 3;
    w[(j + n - 1) % n][j] += 1.0 / 3;
  }
  return w;
}

inline LayerLayout small_layout() {
  LayerLayout layout;
  layout.append("conv.weight", {4, 3, 3});
  layout.append("conv.bias", {4});
  layout.append("norm.v", {1});
  layout.append("fc.weight", {5, 6});
  layout.append("fc.bias", {5});
  return layout;
}

}  // namespace lpdt::algo::testing
