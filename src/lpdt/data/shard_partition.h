#pragma once
// Pathological non-IID split of McMahan et al. 2017 ("Communication-efficient learning of deep
// networks from decentralized data", section 3): sort by label, cut into shards, give each node
// a few random shards, so most nodes see only shards_per_node classes.
#include <torch/types.h>

#include <cstdint>

#include "lpdt/data/partition.h"

namespace lpdt::data {

// With S = num_nodes * shards_per_node shards over the N samples stably sorted by label,
// shard s = sorted[floor(s * N / S), floor((s + 1) * N / S)) (sizes differ by at most one, no
// sample left over). The shard ids are shuffled with Rng::stream(seed, 0, kPartition) and node k
// takes shuffled[k * shards_per_node ... (k + 1) * shards_per_node - 1], in that order.
// labels: [N] int64, non-negative. Errors (ConfigError): shards_per_node < 1, S > N.
Partition partition_shards(const torch::Tensor& labels, int64_t num_nodes, int64_t shards_per_node,
                           std::uint64_t seed);

}  // namespace lpdt::data
