// Dirichlet, shards and IID partitioners; partition files.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "lpdt/core/error.h"
#include "lpdt/data/dirichlet_partition.h"
#include "lpdt/data/iid_partition.h"
#include "lpdt/data/partitioner.h"
#include "lpdt/data/shard_partition.h"
#include "test_util.h"

namespace lpdt::data {
namespace {

using testing::expect_error;

// 10 classes x 200 samples, interleaved.
torch::Tensor balanced_labels() { return torch::arange(2000, torch::kInt64) % 10; }

// Every index in [0, n) at most once; returns how many are used.
int64_t expect_disjoint(const Partition& p, int64_t n) {
  std::set<int64_t> seen;
  for (const auto& node : p.node_indices) {
    for (int64_t i : node) {
      EXPECT_GE(i, 0);
      EXPECT_LT(i, n);
      EXPECT_TRUE(seen.insert(i).second) << "index " << i << " used twice";
    }
  }
  return static_cast<int64_t>(seen.size());
}

TEST(IidPartition, EqualDisjointParts) {
  const Partition p = partition_iid(1003, 10, 5);
  EXPECT_EQ(p.num_nodes(), 10);
  for (const auto& node : p.node_indices) EXPECT_EQ(node.size(), 100u);
  EXPECT_EQ(expect_disjoint(p, 1003), 1000);
  EXPECT_EQ(partition_iid(1003, 10, 5).node_indices, p.node_indices);
  EXPECT_NE(partition_iid(1003, 10, 6).node_indices, p.node_indices);
  expect_error<ConfigError>([] { partition_iid(5, 6, 0); }, {"6 nodes (graph.nodes) but only 5 training samples"});
}

TEST(ShardPartition, CoversEverySampleWithFewClassesPerNode) {
  const auto labels = balanced_labels();
  const Partition p = partition_shards(labels, 10, 2, 9);
  EXPECT_EQ(expect_disjoint(p, 2000), 2000);
  const auto hist = class_histogram(p, labels, 10);
  for (int64_t k = 0; k < 10; ++k) {
    EXPECT_EQ(hist[k].sum().item<int64_t>(), 200);
    // Shards of 100 within classes of 200: each node sees at most 2 classes.
    EXPECT_LE((hist[k] > 0).sum().item<int64_t>(), 2);
  }
  // Uneven division: sizes differ by at most one shard length rounding.
  const Partition q = partition_shards(labels, 7, 3, 1);
  EXPECT_EQ(expect_disjoint(q, 2000), 2000);
  expect_error<ConfigError>([&] { partition_shards(labels, 10, 0, 0); }, {"shards_per_node"});
  expect_error<ConfigError>([&] { partition_shards(labels.narrow(0, 0, 15), 8, 2, 0); },
                            {"16 shards but only 15 samples"});
}

TEST(DirichletPartition, CoversEverySampleAndSkewsWithSmallAlpha) {
  const auto labels = balanced_labels();
  const Partition p = partition_dirichlet(labels, 8, 4, DirichletOptions().alpha(0.1));
  EXPECT_EQ(expect_disjoint(p, 2000), 2000);
  for (const auto& node : p.node_indices) EXPECT_GE(node.size(), 10u);
  EXPECT_EQ(partition_dirichlet(labels, 8, 4, DirichletOptions().alpha(0.1)).node_indices,
            p.node_indices);
  // Small alpha: the average node's largest class share is far above IID's 1/10.
  const auto hist = class_histogram(p, labels, 10).to(torch::kFloat64);
  const auto top_share = (std::get<0>(hist.max(1)) / hist.sum(1)).mean().item<double>();
  EXPECT_GT(top_share, 0.4);
  // Large alpha: close to IID.
  const Partition iid_like = partition_dirichlet(labels, 8, 4, DirichletOptions().alpha(1000.0));
  const auto h2 = class_histogram(iid_like, labels, 10).to(torch::kFloat64);
  EXPECT_LT((std::get<0>(h2.max(1)) / h2.sum(1)).mean().item<double>(), 0.15);
}

TEST(DirichletPartition, TinyAlphaStillPartitions) {
  const auto labels = balanced_labels();
  const Partition p =
      partition_dirichlet(labels, 4, 1, DirichletOptions().alpha(1e-4).min_samples(0));
  EXPECT_EQ(expect_disjoint(p, 2000), 2000);
}

TEST(DirichletPartition, RejectsBadArguments) {
  const auto labels = balanced_labels();
  expect_error<ConfigError>([&] { partition_dirichlet(labels, 4, 0, DirichletOptions().alpha(0)); },
                            {"alpha must be", "> 0"});
  expect_error<ConfigError>(
      [&] { partition_dirichlet(labels, 4, 0, DirichletOptions().alpha(-1)); }, {"alpha"});
  expect_error<ConfigError>(
      [&] { partition_dirichlet(labels, 300, 0, DirichletOptions().min_samples(10)); },
      {"300 nodes (graph.nodes) x 10 least samples each (data.dirichlet_min_samples) exceed the "
       "2000 training samples"});
  // 10 classes, alpha tiny: almost every class goes to one node, so 20 nodes cannot all get 50.
  expect_error<ConfigError>(
      [&] {
        partition_dirichlet(labels, 20, 0,
                            DirichletOptions().alpha(0.001).min_samples(50).max_tries(5));
      },
      {"5 tries", "lower data.dirichlet_min_samples or graph.nodes, or raise data.dirichlet_alpha"});
}

TEST(Partition, HistogramJsonAndCsv) {
  const auto labels = torch::tensor({0, 1, 1, 2, 2, 2}, torch::kInt64);
  Partition p;
  p.node_indices = {{0, 3}, {1, 2, 4}};
  const auto hist = class_histogram(p, labels, 3);
  EXPECT_TRUE(torch::equal(hist, torch::tensor({1, 0, 1, 0, 2, 1}, torch::kInt64).view({2, 3})));

  testing::TempDir dir;
  write_partition_json(dir.file("p.json"), p, labels, 3);
  std::ifstream in(dir.file("p.json"));
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["num_nodes"], 2);
  EXPECT_EQ(j["num_samples"], 6);
  EXPECT_EQ(j["partitions"].get<std::vector<std::vector<int64_t>>>(), p.node_indices);
  EXPECT_EQ(j["class_counts"].get<std::vector<std::vector<int64_t>>>(),
            (std::vector<std::vector<int64_t>>{{1, 0, 1}, {0, 2, 1}}));
  EXPECT_EQ(read_partition_json(dir.file("p.json"), 6).node_indices, p.node_indices);

  write_class_histogram_csv(dir.file("h.csv"), p, labels, 3);
  std::ifstream csv(dir.file("h.csv"));
  const std::string text((std::istreambuf_iterator<char>(csv)), {});
  EXPECT_EQ(text, "node,class_0,class_1,class_2\n0,1,0,1\n1,0,2,1\n");
}

TEST(Partition, ReadRejectsBadFiles) {
  testing::TempDir dir;
  const auto path = dir.file("bad.json");
  testing::write_bytes(path, {'{', 'x'});
  expect_error<UserError>([&] { read_partition_json(path, 10); }, {path, "not valid JSON"});
  std::ofstream(path) << R"({"partitions": [[0, 1], [1]]})";
  expect_error<UserError>([&] { read_partition_json(path, 10); },
                          {path, "sample 1 is given to node 0 and again to node 1"});
  std::ofstream(path) << R"({"partitions": [[0, 12]]})";
  expect_error<UserError>([&] { read_partition_json(path, 10); }, {path, "12", "[0, 10)"});
  std::ofstream(path) << R"({"nodes": 3})";
  expect_error<UserError>([&] { read_partition_json(path, 10); }, {path, "\"partitions\""});
  // The reference fixtures read as partitions.
  const Partition f =
      read_partition_json(std::string(LPDT_FIXTURES_DIR) + "/partitions/case2.json", 5000);
  EXPECT_EQ(f.num_nodes(), 4);
  EXPECT_EQ(f.num_assigned(), 5000);
}

TEST(Partitioner, DispatchesByKind) {
  const auto labels = balanced_labels();
  EXPECT_EQ(parse_partition_kind("dirichlet"), PartitionKind::kDirichlet);
  EXPECT_EQ(parse_skew_mode("reference"), SkewMode::kReference);
  expect_error<ConfigError>([] { parse_partition_kind("noniid"); },
                            {"noniid", "iid, skew, dirichlet, shards"});
  const auto skew =
      make_partition(labels, 4, 1234, PartitionOptions().kind(PartitionKind::kSkew).skew(0.5));
  EXPECT_EQ(skew.node_indices, partition_skew(labels, 4, 0.5, 1234).node_indices);
  const auto iid = make_partition(labels, 4, 2, PartitionOptions());
  EXPECT_EQ(iid.node_indices, partition_iid(2000, 4, 2).node_indices);
  const auto shards = make_partition(
      labels, 4, 2, PartitionOptions().kind(PartitionKind::kShards).shards_per_node(3));
  EXPECT_EQ(shards.node_indices, partition_shards(labels, 4, 3, 2).node_indices);
}

}  // namespace
}  // namespace lpdt::data
