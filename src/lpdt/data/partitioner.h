#pragma once
// One entry point for the experiment layer: a partition described by options (as read from a
// run's config) applied to a dataset's labels.
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lpdt/data/dirichlet_partition.h"
#include "lpdt/data/partition.h"
#include "lpdt/data/skew_partition.h"

namespace lpdt::data {

enum class PartitionKind { kIid, kSkew, kDirichlet, kShards };

// "iid" | "skew" | "dirichlet" | "shards"; ConfigError naming the accepted values otherwise.
PartitionKind parse_partition_kind(const std::string& name);
const char* partition_kind_name(PartitionKind kind);
// "reference" | "lpdt".
SkewMode parse_skew_mode(const std::string& name);
const char* skew_mode_name(SkewMode mode);

struct PartitionOptions {
  PartitionOptions& kind(PartitionKind v) {
    kind_ = v;
    return *this;
  }
  PartitionOptions& skew(double v) {
    skew_ = v;
    return *this;
  }
  PartitionOptions& skew_mode(SkewMode v) {
    skew_mode_ = v;
    return *this;
  }
  PartitionOptions& class_sizes(std::vector<int64_t> v) {
    class_sizes_ = std::move(v);
    return *this;
  }
  PartitionOptions& dirichlet(const DirichletOptions& v) {
    dirichlet_ = v;
    return *this;
  }
  PartitionOptions& shards_per_node(int64_t v) {
    shards_per_node_ = v;
    return *this;
  }

  PartitionKind kind_ = PartitionKind::kIid;
  double skew_ = 0.0;                     // kSkew
  SkewMode skew_mode_ = SkewMode::kLpdt;  // kSkew
  std::vector<int64_t> class_sizes_;      // kSkew, reference mode only
  DirichletOptions dirichlet_;            // kDirichlet
  int64_t shards_per_node_ = 2;           // kShards
};

// labels: [N] int64
Partition make_partition(const torch::Tensor& labels, int64_t num_nodes, std::uint64_t seed,
                         const PartitionOptions& options);

}  // namespace lpdt::data
