// Consensus distance per layer (algo/consensus.h) against its definition written as plain loops
// over nodes and scalars, on random rows with layers of different scales.
#include "lpdt/algo/consensus.h"

#include <gtest/gtest.h>

#include <cmath>

#include "lpdt/core/error.h"

namespace lpdt::algo {
namespace {

constexpr double kTolerance = 1e-9;  // relative; everything is summed in float64

LayerLayout three_layers() {
  LayerLayout layout;
  layout.append("conv.weight", {4, 3, 3, 3});
  layout.append("norm.gamma", {4});
  layout.append("fc.weight", {10, 7});
  return layout;
}

TEST(LayerConsensus, MatchesItsDefinitionAndSumsToTheWhole) {
  const LayerLayout layout = three_layers();
  const std::int64_t n = 5;
  at::manual_seed(7);
  at::Tensor x = at::randn({n, layout.total_numel});  // [n, P] float32
  // Scales apart by 100x, so that a segment boundary off by one column shows.
  x.narrow(1, layout.segments[1].offset, layout.segments[1].numel).mul_(100);
  const auto layers = layer_consensus(x, layout);
  ASSERT_EQ(layers.size(), 3u);
  const at::Tensor xd = x.to(at::kDouble);
  const auto a = xd.accessor<double, 2>();
  double total = 0;
  for (std::size_t s = 0; s < layers.size(); ++s) {
    const LayerSegment& segment = layout.segments[s];
    double distance = 0, node_norms = 0, average_sq = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      double norm_sq = 0;
      for (std::int64_t c = segment.offset; c < segment.offset + segment.numel; ++c) {
        norm_sq += a[i][c] * a[i][c];
      }
      node_norms += std::sqrt(norm_sq);
    }
    for (std::int64_t c = segment.offset; c < segment.offset + segment.numel; ++c) {
      double mean = 0;
      for (std::int64_t i = 0; i < n; ++i) mean += a[i][c];
      mean /= static_cast<double>(n);
      average_sq += mean * mean;
      for (std::int64_t i = 0; i < n; ++i) distance += (a[i][c] - mean) * (a[i][c] - mean);
    }
    distance /= static_cast<double>(n);
    const double mean_node_norm = node_norms / static_cast<double>(n);
    EXPECT_EQ(layers[s].name, segment.name);
    EXPECT_EQ(layers[s].numel, segment.numel);
    EXPECT_NEAR(layers[s].distance, distance, kTolerance * distance);
    EXPECT_NEAR(layers[s].mean_node_norm, mean_node_norm, kTolerance * mean_node_norm);
    EXPECT_NEAR(layers[s].average_norm, std::sqrt(average_sq), kTolerance * std::sqrt(average_sq));
    EXPECT_NEAR(layers[s].relative_distance, std::sqrt(distance) / mean_node_norm, kTolerance);
    total += layers[s].distance;
  }
  const double whole = consensus_distance(x);
  EXPECT_NEAR(total, whole, kTolerance * whole);
}

// Scaling one layer of every node by c scales its distance by c^2 and its relative distance not
// at all: the column that tells growing weights from disagreeing ones.
TEST(LayerConsensus, RelativeDistanceIgnoresAGrowingLayer) {
  const LayerLayout layout = three_layers();
  at::manual_seed(8);
  const at::Tensor x = at::randn({4, layout.total_numel});
  at::Tensor grown = x.clone();
  grown.narrow(1, layout.segments[0].offset, layout.segments[0].numel).mul_(10);
  const auto before = layer_consensus(x, layout);
  const auto after = layer_consensus(grown, layout);
  EXPECT_NEAR(after[0].distance, 100 * before[0].distance, 1e-6 * after[0].distance);
  EXPECT_NEAR(after[0].relative_distance, before[0].relative_distance, kTolerance);
  EXPECT_DOUBLE_EQ(after[2].distance, before[2].distance);
}

TEST(LayerConsensus, AgreeingNodesHaveDistanceZero) {
  const LayerLayout layout = three_layers();
  const at::Tensor row = at::randn({1, layout.total_numel});
  for (const auto& layer : layer_consensus(row.repeat({3, 1}), layout)) {
    EXPECT_EQ(layer.distance, 0.0) << layer.name;
    EXPECT_EQ(layer.relative_distance, 0.0) << layer.name;
    EXPECT_GT(layer.mean_node_norm, 0.0) << layer.name;
  }
}

// Both are computed a block of columns at a time (32 MiB of float64 by default): blocks of one
// column, of a few columns across segment boundaries and of the whole give the same figures to
// float64 rounding, on the definition's test rows.
TEST(LayerConsensus, BlocksOfColumnsGiveTheSameFigures) {
  const LayerLayout layout = three_layers();
  const std::int64_t n = 5;
  at::manual_seed(9);
  const at::Tensor x = at::randn({n, layout.total_numel}) * 3 + 1;
  const double whole = consensus_distance(x, std::int64_t{1} << 30);
  const auto layers = layer_consensus(x, layout, std::int64_t{1} << 30);
  for (const std::int64_t block_values : {std::int64_t{1}, n, 3 * n, 7 * n + 2}) {
    EXPECT_NEAR(consensus_distance(x, block_values), whole, kTolerance * whole) << block_values;
    const auto blocked = layer_consensus(x, layout, block_values);
    ASSERT_EQ(blocked.size(), layers.size());
    for (std::size_t s = 0; s < layers.size(); ++s) {
      EXPECT_NEAR(blocked[s].distance, layers[s].distance, kTolerance * layers[s].distance)
          << block_values << " " << layers[s].name;
      EXPECT_NEAR(blocked[s].mean_node_norm, layers[s].mean_node_norm,
                  kTolerance * layers[s].mean_node_norm)
          << block_values << " " << layers[s].name;
      EXPECT_NEAR(blocked[s].average_norm, layers[s].average_norm,
                  kTolerance * layers[s].average_norm)
          << block_values << " " << layers[s].name;
    }
  }
  EXPECT_THROW(consensus_distance(x, 0), std::exception);
}

TEST(LayerConsensus, RejectsRowsOfTheWrongWidth) {
  const LayerLayout layout = three_layers();
  EXPECT_THROW(layer_consensus(at::zeros({2, layout.total_numel + 1}), layout), std::exception);
}

}  // namespace
}  // namespace lpdt::algo
