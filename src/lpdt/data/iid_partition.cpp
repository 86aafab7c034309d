#include "lpdt/data/iid_partition.h"

#include <numeric>

#include "lpdt/core/error.h"
#include "lpdt/core/rng.h"
#include "lpdt/data/partition_checks.h"

namespace lpdt::data {

Partition partition_iid(int64_t num_samples, int64_t num_nodes, std::uint64_t seed) {
  const std::string who = "iid partition";
  if (num_samples < 1) throw ConfigError(who + ": no samples to partition");
  detail::check_num_nodes(num_nodes, num_samples, who);
  std::vector<int64_t> order(static_cast<std::size_t>(num_samples));
  std::iota(order.begin(), order.end(), int64_t{0});
  Rng rng = Rng::stream(seed, 0, StreamPurpose::kPartition);
  lpdt::shuffle(order.begin(), order.end(), rng);
  const int64_t per_node = num_samples / num_nodes;
  Partition partition;
  partition.node_indices.resize(num_nodes);
  for (int64_t k = 0; k < num_nodes; ++k) {
    partition.node_indices[k].assign(order.begin() + k * per_node,
                                     order.begin() + (k + 1) * per_node);
  }
  return partition;
}

}  // namespace lpdt::data
