#pragma once
// IID split: a seeded random permutation cut into equal parts.
#include <cstdint>

#include "lpdt/data/partition.h"

namespace lpdt::data {

// Shuffles 0..num_samples-1 with Rng::stream(seed, 0, kPartition); node k takes entries
// [k * m, (k + 1) * m) with m = floor(num_samples / num_nodes). The num_samples mod num_nodes
// left over are used by no node (as the reference's skew = 0 split). ConfigError when
// num_nodes is outside [1, num_samples].
Partition partition_iid(int64_t num_samples, int64_t num_nodes, std::uint64_t seed);

}  // namespace lpdt::data
