// The skew partitioner against the official code's exact outputs (shared/fixtures/partitions).
#include "lpdt/data/skew_partition.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lpdt/core/error.h"
#include "lpdt/data/idx_reader.h"
#include "test_util.h"

namespace lpdt::data {
namespace {

nlohmann::json load_fixture(const std::string& name) {
  const std::string path = std::string(LPDT_FIXTURES_DIR) + "/partitions/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "missing fixture " << path;
  nlohmann::json j;
  in >> j;
  return j;
}

torch::Tensor to_tensor(const std::vector<int64_t>& v) { return torch::tensor(v, torch::kInt64); }

void expect_matches_fixture(const nlohmann::json& j, const torch::Tensor& labels) {
  const auto class_sizes = j["class_sizes"].get<std::vector<int64_t>>();
  const auto expected = j["partitions"].get<std::vector<std::vector<int64_t>>>();
  const Partition p =
      partition_skew(labels, j["num_nodes"].get<int64_t>(), j["skew"].get<double>(),
                     j["seed"].get<std::uint64_t>(), class_sizes, SkewMode::kReference);
  ASSERT_EQ(p.num_nodes(), static_cast<int64_t>(expected.size()));
  for (std::size_t k = 0; k < expected.size(); ++k) {
    ASSERT_EQ(p.node_indices[k].size(), expected[k].size()) << "node " << k;
    EXPECT_EQ(p.node_indices[k], expected[k]) << "node " << k << " differs";
  }
  const auto counts = j["class_counts"].get<std::vector<std::vector<int64_t>>>();
  const auto histogram = class_histogram(p, labels, j["num_classes"].get<int64_t>());
  for (std::size_t k = 0; k < counts.size(); ++k) {
    for (std::size_t c = 0; c < counts[k].size(); ++c) {
      EXPECT_EQ(histogram[k][c].item<int64_t>(), counts[k][c]) << "node " << k << " class " << c;
    }
  }
  // Without a table the reference mode uses the real class counts: the same here.
  const Partition q = partition_skew(labels, j["num_nodes"].get<int64_t>(), j["skew"].get<double>(),
                                     j["seed"].get<std::uint64_t>(), {}, SkewMode::kReference);
  EXPECT_EQ(q.node_indices, p.node_indices);
}

class SkewFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(SkewFixture, ReferenceModeIsBitExact) {
  const auto j = load_fixture(GetParam());
  expect_matches_fixture(j, to_tensor(j["labels"].get<std::vector<int64_t>>()));
}

INSTANTIATE_TEST_SUITE_P(Cases, SkewFixture,
                         ::testing::Values("case1.json", "case2.json", "case3.json", "case4.json"));

TEST(SkewFixture, Case5FashionMnistIsBitExact) {
  const std::string label_file = std::string(kFashionMnistDir) + "/train-labels-idx1-ubyte.gz";
  if (!std::filesystem::exists(label_file)) {
    GTEST_SKIP() << label_file << " not found (install Debian's dataset-fashion-mnist)";
  }
  const auto j = load_fixture("case5.json");
  const torch::Tensor file_labels = read_idx_labels(label_file, "fashion-mnist");
  ASSERT_EQ(file_labels.size(0), 60000);
  // The fixture keeps the first 5000 samples of each class in file order.
  std::vector<int64_t> first_per_class;
  std::vector<int64_t> seen(10, 0);
  const auto* fl = file_labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < file_labels.size(0); ++i) {
    if (seen[fl[i]]++ < 5000) first_per_class.push_back(i);
  }
  const auto kept = j["kept_file_indices"].get<std::vector<int64_t>>();
  ASSERT_EQ(kept, first_per_class);
  const auto labels = file_labels.index_select(0, to_tensor(kept));
  ASSERT_EQ(labels.size(0), 50000);
  expect_matches_fixture(j, labels);
}

TEST(SkewPartition, NodeSizesUseLeftToRightDoubleArithmetic) {
  // lpdl-reference-spec.md 8.2: n=4, skew 0.8, 50,000 samples -> 10000 + int(2499.9999999999995).
  const auto s = skew_node_sizes(50000, 4, 0.8);
  EXPECT_EQ(s.sorted, 10000);
  EXPECT_EQ(s.random, 2499);
  const auto t = skew_node_sizes(50000, 8, 0.8);
  EXPECT_EQ(t.sorted + t.random, 6249);
  EXPECT_EQ(skew_node_sizes(5000, 8, 0.0).random, 625);
  EXPECT_EQ(skew_node_sizes(5000, 8, 1.0).sorted, 625);
  EXPECT_EQ(skew_node_sizes(5000, 8, 1.0).random, 0);
}

TEST(SkewPartition, LpdtModeKeepsTheSemantics) {
  const auto j = load_fixture("case1.json");
  const auto labels = to_tensor(j["labels"].get<std::vector<int64_t>>());
  const Partition p = partition_skew(labels, 8, 0.8, 1234, {}, SkewMode::kLpdt);
  validate_partition(p, labels.size(0), "lpdt skew");
  const auto* y = labels.data_ptr<int64_t>();
  int64_t sorted_seen = 0;
  for (const auto& node : p.node_indices) {
    ASSERT_EQ(node.size(), 624u);
    // The sorted block (500 samples) is a run of non-decreasing labels, continuing the previous
    // node's block: the class-sorted pool cut in order.
    for (std::size_t i = 1; i < 500; ++i) EXPECT_LE(y[node[i - 1]], y[node[i]]);
    EXPECT_EQ(y[node[0]], (sorted_seen / 400));  // 400 = int(0.8 * 500) per class in S
    sorted_seen += 500;
  }
  // Different sort and RNG: not the reference's lists, but the same node of the same seed is
  // reproducible.
  EXPECT_NE(p.node_indices, j["partitions"].get<std::vector<std::vector<int64_t>>>());
  EXPECT_EQ(partition_skew(labels, 8, 0.8, 1234).node_indices, p.node_indices);
  EXPECT_NE(partition_skew(labels, 8, 0.8, 1235).node_indices, p.node_indices);
}

TEST(SkewPartition, LpdtModeWorksWithUnequalClasses) {
  std::vector<int64_t> y;
  for (int c = 0; c < 5; ++c) {
    for (int i = 0; i < 100 + 37 * c; ++i) y.push_back(c);
  }
  const auto labels = to_tensor(y);
  const Partition p = partition_skew(labels, 6, 0.5, 3);
  validate_partition(p, labels.size(0), "skew");
  const auto sizes = skew_node_sizes(labels.size(0), 6, 0.5);
  for (const auto& node : p.node_indices) {
    EXPECT_EQ(static_cast<int64_t>(node.size()), sizes.sorted + sizes.random);
  }
}

TEST(SkewPartition, RejectsBadArguments) {
  const auto labels = to_tensor({0, 1, 2, 0, 1, 2, 0, 1});
  using testing::expect_error;
  expect_error<ConfigError>([&] { partition_skew(labels, 2, 1.3, 0); },
                            {"skew must be in [0, 1]", "1.3"});
  expect_error<ConfigError>([&] { partition_skew(labels, 2, -0.1, 0); }, {"skew must be in"});
  expect_error<ConfigError>([&] { partition_skew(labels, 2, std::nan(""), 0); },
                            {"skew must be in"});
  expect_error<ConfigError>([&] { partition_skew(labels, 9, 0.5, 0); },
                            {"9 nodes (graph.nodes) but only 8 training samples"});
  expect_error<ConfigError>([&] { partition_skew(labels, 0, 0.5, 0); }, {"nodes must be >= 1"});
  expect_error<ConfigError>(
      [&] {
        partition_skew(to_tensor({0, -1}), 1, 0.5, 0);
      },
      {"label -1 at index 1 is not a class id"});
  expect_error<ConfigError>(
      [&] {
        partition_skew(to_tensor({0, int64_t{1} << 40}), 1, 0.5, 0);
      },
      {"not a class id"});
  expect_error<ConfigError>(
      [&] {
        partition_skew(labels, 2, 0.5, 0, {5, 5, 5}, SkewMode::kLpdt);
      },
      {"class_sizes differ"});
  expect_error<ConfigError>([&] { partition_skew(labels.to(torch::kInt32), 2, 0.5, 0); },
                            {"int64"});
  // Four classes of one sample, two nodes, skew 0.8: each class gives int(0.8) = 0 samples to the
  // sorted pool, and a node's share int(2 * 0.2) = 0 from the random one.
  expect_error<ConfigError>(
      [&] {
        partition_skew(to_tensor({0, 1, 2, 3}), 2, 0.8, 0);
      },
      {"node 0 of 2 gets no sample", "4 samples and skew 0.8 the", "use fewer nodes or more data"});
  expect_error<ConfigError>([&] { partition_skew(labels, 8, 0.5, 0); }, {"0 samples"});
}

}  // namespace
}  // namespace lpdt::data
