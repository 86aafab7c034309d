#pragma once
// Label-distribution skew by a Dirichlet draw per class (the split popularised by Hsu et al.
// 2019, "Measuring the effects of non-identical data distribution", in its per-class form of
// Yurochkin et al. 2019 / Wang et al. 2020): small alpha gives each node few classes, large
// alpha approaches IID.
#include <torch/types.h>

#include <cstdint>

#include "lpdt/data/partition.h"

namespace lpdt::data {

struct DirichletOptions {
  // Concentration of the symmetric Dirichlet over nodes; > 0.
  DirichletOptions& alpha(double v) {
    alpha_ = v;
    return *this;
  }
  // Every node must end with at least this many samples; a draw that misses is redrawn.
  DirichletOptions& min_samples(int64_t v) {
    min_samples_ = v;
    return *this;
  }
  // Redraws before giving up with a ConfigError.
  DirichletOptions& max_tries(int64_t v) {
    max_tries_ = v;
    return *this;
  }

  double alpha_ = 0.5;
  int64_t min_samples_ = 10;
  int64_t max_tries_ = 100;
};

// For each class c (ascending), with its n_c indices shuffled:
//   p ~ Dirichlet(alpha, ..., alpha) over the n nodes (p_k = g_k / sum g, g_k ~ Gamma(alpha, 1))
//   node k gets entries [floor(n_c * P_{k-1}), floor(n_c * P_k)) with P_k = p_0 + ... + p_k
//   (the last node's bound is n_c exactly).
// All draws come from Rng::stream(seed, 0, kPartition). labels: [N] int64, non-negative.
// Node lists are class by class. Errors (ConfigError): alpha <= 0, num_nodes outside [1, N],
// num_nodes * min_samples > N, no valid draw within max_tries.
Partition partition_dirichlet(const torch::Tensor& labels, int64_t num_nodes, std::uint64_t seed,
                              const DirichletOptions& options = {});

}  // namespace lpdt::data
