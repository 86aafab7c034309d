#include "lpdt/data/shard_partition.h"

#include <torch/types.h>

#include <numeric>

#include "lpdt/core/error.h"
#include "lpdt/core/rng.h"
#include "lpdt/data/partition_checks.h"

namespace lpdt::data {

Partition partition_shards(const torch::Tensor& labels, int64_t num_nodes, int64_t shards_per_node,
                           std::uint64_t seed) {
  const std::string who = "shards partition";
  const std::vector<int64_t> y = detail::checked_labels(labels, who);
  const auto n_samples = static_cast<int64_t>(y.size());
  detail::check_num_nodes(num_nodes, n_samples, who);
  if (shards_per_node < 1) {
    throw ConfigError(who + ": shards_per_node must be >= 1, got " +
                      std::to_string(shards_per_node));
  }
  const int64_t num_shards = num_nodes * shards_per_node;
  if (num_shards > n_samples) {
    throw ConfigError(who + ": " + std::to_string(num_nodes) + " nodes x " +
                      std::to_string(shards_per_node) + " shards = " + std::to_string(num_shards) +
                      " shards but only " + std::to_string(n_samples) + " samples");
  }
  const std::vector<int64_t> order = detail::stable_class_order(y);
  std::vector<int64_t> shard_ids(static_cast<std::size_t>(num_shards));
  std::iota(shard_ids.begin(), shard_ids.end(), int64_t{0});
  Rng rng = Rng::stream(seed, 0, StreamPurpose::kPartition);
  lpdt::shuffle(shard_ids.begin(), shard_ids.end(), rng);

  Partition partition;
  partition.node_indices.resize(num_nodes);
  for (int64_t k = 0; k < num_nodes; ++k) {
    auto& node = partition.node_indices[k];
    for (int64_t j = 0; j < shards_per_node; ++j) {
      const int64_t s = shard_ids[k * shards_per_node + j];
      // s * N / S in 64-bit: both factors < 2^31 in any real dataset, checked by N >= S.
      const int64_t lo = s * n_samples / num_shards;
      const int64_t hi = (s + 1) * n_samples / num_shards;
      node.insert(node.end(), order.begin() + lo, order.begin() + hi);
    }
  }
  return partition;
}

}  // namespace lpdt::data
