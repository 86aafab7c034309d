#pragma once
// The non-IID "skew" partition of the paper's official code (skew_sort + DataPartitioner,
// lpdl-reference-spec.md 8.2): a fraction `skew` of every node's data is a contiguous block of the
// class-sorted pool, the rest is drawn IID from a shuffled pool.
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "lpdt/data/partition.h"

namespace lpdt::data {

enum class SkewMode {
  // Bit-exact with the official code: numpy 1.24's unstable argsort (numpy_argsort.h) and
  // CPython's random.Random(seed).shuffle (python_random.h). class_sizes may be given as the
  // official code hard-codes them (it assumes, without checking, that they are the real counts).
  kReference,
  // Same semantics with lpdt's own machinery: a stable sort by label, lpdt::Rng shuffling
  // (Rng::stream(seed, 0, kPartition)), and class sizes taken from the data (so it works on any
  // dataset).
  kLpdt,
};

// How many samples each node takes from the sorted and the random pool (every node the same):
// with frac = 1.0 / n in double and products evaluated left to right as in Python,
//   skew == 1: sorted = int(frac * N), random = 0
//   skew == 0: sorted = 0, random = int(frac * N)
//   otherwise: sorted = int(frac * N * skew), random = int(frac * N * (1 - skew)).
struct SkewNodeSizes {
  int64_t sorted = 0;
  int64_t random = 0;
};
SkewNodeSizes skew_node_sizes(int64_t num_samples, int64_t num_nodes, double skew);

// labels: [N] int64, non-negative. class_sizes: one entry per class (empty: the actual counts;
// in kLpdt mode a non-empty table must equal the actual counts). Errors (ConfigError): skew
// outside [0, 1], num_nodes outside [1, N], nodes that would get no sample, a bad class_sizes.
// Node k's list is its sorted block followed by its random block, in pool order.
Partition partition_skew(const torch::Tensor& labels, int64_t num_nodes, double skew,
                         std::uint64_t seed, const std::vector<int64_t>& class_sizes = {},
                         SkewMode mode = SkewMode::kLpdt);

}  // namespace lpdt::data
