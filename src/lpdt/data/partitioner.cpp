#include "lpdt/data/partitioner.h"

#include <torch/types.h>

#include "lpdt/core/error.h"
#include "lpdt/data/iid_partition.h"
#include "lpdt/data/shard_partition.h"

namespace lpdt::data {

PartitionKind parse_partition_kind(const std::string& name) {
  if (name == "iid") return PartitionKind::kIid;
  if (name == "skew") return PartitionKind::kSkew;
  if (name == "dirichlet") return PartitionKind::kDirichlet;
  if (name == "shards") return PartitionKind::kShards;
  throw ConfigError("unknown partition \"" + name +
                    "\", expected one of: iid, skew, dirichlet, shards");
}

const char* partition_kind_name(PartitionKind kind) {
  switch (kind) {
    case PartitionKind::kIid:
      return "iid";
    case PartitionKind::kSkew:
      return "skew";
    case PartitionKind::kDirichlet:
      return "dirichlet";
    case PartitionKind::kShards:
      return "shards";
  }
  return "?";
}

SkewMode parse_skew_mode(const std::string& name) {
  if (name == "reference") return SkewMode::kReference;
  if (name == "lpdt") return SkewMode::kLpdt;
  throw ConfigError("unknown skew mode \"" + name + "\", expected reference or lpdt");
}

const char* skew_mode_name(SkewMode mode) {
  return mode == SkewMode::kReference ? "reference" : "lpdt";
}

Partition make_partition(const torch::Tensor& labels, int64_t num_nodes, std::uint64_t seed,
                         const PartitionOptions& o) {
  switch (o.kind_) {
    case PartitionKind::kIid:
      if (!labels.defined() || labels.dim() != 1) {
        throw ConfigError("iid partition: labels must be a [N] int64 tensor");
      }
      return partition_iid(labels.size(0), num_nodes, seed);
    case PartitionKind::kSkew:
      return partition_skew(labels, num_nodes, o.skew_, seed, o.class_sizes_, o.skew_mode_);
    case PartitionKind::kDirichlet:
      return partition_dirichlet(labels, num_nodes, seed, o.dirichlet_);
    case PartitionKind::kShards:
      return partition_shards(labels, num_nodes, o.shards_per_node_, seed);
  }
  LPDT_CHECK(false, "make_partition: unhandled kind");
  return {};
}

}  // namespace lpdt::data
