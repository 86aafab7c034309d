#pragma once
// A partition of a dataset over n nodes: each node's list of sample indices (a view of the
// dataset, never a copy), plus the files that record it with a run.
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lpdt::data {

struct Partition {
  // node_indices[k]: the dataset indices of node k, in the order the partitioner produced them.
  std::vector<std::vector<int64_t>> node_indices;

  int64_t num_nodes() const { return static_cast<int64_t>(node_indices.size()); }
  // Samples used by any node (partitioners may leave a few over: see docs/data.md).
  int64_t num_assigned() const;
};

// Checks that every index is in [0, num_samples) and that no index is used twice; a failure is a
// UserError naming `what` (partitions can come from files).
void validate_partition(const Partition& partition, int64_t num_samples, const std::string& what);

// Per-node class counts. labels: [N] int64 in [0, num_classes) -> [n, num_classes] int64
torch::Tensor class_histogram(const Partition& partition, const torch::Tensor& labels,
                              int64_t num_classes);

// JSON record of a partition: {"num_nodes", "num_classes", "num_samples", "partitions": [[...]],
// "class_counts": [[...]]}. The field names match the reference fixtures
// (shared/fixtures/partitions), so read_partition_json reads those too.
// labels: [N] int64
void write_partition_json(const std::string& path, const Partition& partition,
                          const torch::Tensor& labels, int64_t num_classes);
// Reads the "partitions" field and validates it against num_samples (UserError on any problem).
Partition read_partition_json(const std::string& path, int64_t num_samples);

// CSV: header "node,class_0,...,class_{C-1}", one row per node. labels: [N] int64
void write_class_histogram_csv(const std::string& path, const Partition& partition,
                               const torch::Tensor& labels, int64_t num_classes);

}  // namespace lpdt::data
