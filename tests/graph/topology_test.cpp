#include "lpdt/graph/topology.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lpdt/core/error.h"
#include "lpdt/graph/builders.h"

namespace lpdt::graph {
namespace {

// Runs `build` and returns the ConfigError message ("" if nothing was thrown).
template <typename F>
std::string config_error(F&& build) {
  try {
    build();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::vector<Edge> directed_ring_edges(std::int64_t n) {
  std::vector<Edge> edges;
  for (std::int64_t i = 0; i < n; ++i) edges.push_back({i, (i + 1) % n});
  return edges;
}

TEST(TopologyTest, FromEdgesBuildsColumnStochasticWeightsWithSelfLoops) {
  const Topology t = Topology::from_edges("custom-ring", 5, directed_ring_edges(5));
  EXPECT_EQ(t.num_nodes(), 5);
  EXPECT_EQ(t.num_edges(), 5);
  EXPECT_EQ(t.mixing(), "uniform");
  for (std::int64_t j = 0; j < 5; ++j) {
    EXPECT_EQ(t.out_neighbors(j), std::vector<std::int64_t>{(j + 1) % 5});
    EXPECT_EQ(t.in_neighbors(j), std::vector<std::int64_t>{(j + 4) % 5});
    EXPECT_DOUBLE_EQ(t.self_weight(j), 0.5);
    // W[i][j] is the weight of edge j -> i.
    EXPECT_DOUBLE_EQ(t.weight((j + 1) % 5, j), 0.5);
    EXPECT_DOUBLE_EQ(t.weight(j, (j + 1) % 5), 0.0);
  }
  EXPECT_TRUE(t.is_doubly_stochastic());
  EXPECT_FALSE(t.is_undirected());
  EXPECT_FALSE(t.is_symmetric());
  EXPECT_TRUE(t.is_regular());
  EXPECT_TRUE(t.is_strongly_connected());
}

TEST(TopologyTest, MixingMatrixTensorMatchesWeights) {
  const Topology t = Topology::from_edges("custom-ring", 4, directed_ring_edges(4));
  const at::Tensor w = t.mixing_matrix();
  ASSERT_EQ(w.scalar_type(), at::kDouble);
  ASSERT_EQ(w.sizes(), (at::IntArrayRef{4, 4}));
  for (std::int64_t i = 0; i < 4; ++i) {
    for (std::int64_t j = 0; j < 4; ++j) EXPECT_EQ(w[i][j].item<double>(), t.weight(i, j));
  }
  const at::Tensor w32 = t.mixing_matrix(at::kFloat);
  EXPECT_EQ(w32.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::allclose(w32.to(at::kDouble), w));
  // Column sums are exactly 1 in float64 for these weights.
  EXPECT_TRUE(at::equal(w.sum(0), at::ones({4}, w.options())));
}

TEST(TopologyTest, FromMatrixTensorRoundTrips) {
  const Topology ring5 = ring(5);
  const Topology copy = Topology::from_matrix("copy", ring5.mixing_matrix());
  EXPECT_EQ(copy.mixing(), "custom");
  EXPECT_EQ(copy.num_edges(), ring5.num_edges());
  EXPECT_EQ(copy.out_neighbors(0), ring5.out_neighbors(0));
  EXPECT_EQ(copy.weights(), ring5.weights());
  // 1/3 rounded to float32 sums to 1 only within float32's rounding: taken at float32's
  // precision, each column divided by its sum in float64, so that the average never drifts.
  const Topology from32 = Topology::from_matrix("float32", ring5.mixing_matrix(at::kFloat));
  const at::Tensor w32 = from32.mixing_matrix();
  EXPECT_TRUE(at::allclose(w32, ring5.mixing_matrix(), /*rtol=*/0, /*atol=*/1e-7));
  EXPECT_LT((w32.sum(0) - 1).abs().max().item<double>(), 1e-12);
  // A float32 column off by more than n of float32's epsilons is no rounding: named.
  at::Tensor off = ring5.mixing_matrix(at::kFloat);
  off[0][2] += 1e-3f;
  const std::string message = config_error([&] { Topology::from_matrix("off", off); });
  EXPECT_NE(message.find("tolerance 1e-12"), std::string::npos) << message;
  EXPECT_NE(message.find("column 2"), std::string::npos) << message;
  // Node counts beyond kMaxNodes are refused before anything is allocated (n * n overflowed).
  EXPECT_NE(config_error([] { Topology::from_matrix("huge", std::int64_t{1} << 32, {}); })
                .find("at most 4096"),
            std::string::npos);
  EXPECT_NE(config_error([] { Topology::from_weighted_edges("huge", std::int64_t{1} << 32, {}); })
                .find("at most 4096"),
            std::string::npos);
  EXPECT_NE(config_error([] {
              Topology::from_matrix("vector", at::ones({3}, at::kDouble));
            }).find("square floating-point tensor"),
            std::string::npos);
}

TEST(TopologyTest, MissingLinkIsRejectedAsNotStronglyConnected) {
  std::vector<Edge> edges = directed_ring_edges(8);
  edges.erase(edges.begin() + 3);  // drop 3 -> 4: nothing reaches 4 any more
  const std::string message = config_error([&] { Topology::from_edges("broken-ring", 8, edges); });
  EXPECT_NE(message.find("topology 'broken-ring' is not strongly connected"), std::string::npos)
      << message;
  EXPECT_NE(message.find("node 4 cannot be reached from node 0"), std::string::npos) << message;

  // The same graph as an explicit matrix: node 3 keeps everything.
  std::vector<double> w(64, 0.0);
  for (std::int64_t j = 0; j < 8; ++j) {
    w[j * 8 + j] = 0.5;
    w[((j + 1) % 8) * 8 + j] = 0.5;
  }
  w[4 * 8 + 3] = 0.0;
  w[3 * 8 + 3] = 1.0;
  EXPECT_NE(
      config_error([&] { Topology::from_matrix("broken", 8, w); }).find("not strongly connected"),
      std::string::npos);
  // As one step of a time-varying schedule the check is deferred to the schedule.
  EXPECT_FALSE(
      Topology::from_matrix("step", 8, w, Connectivity::kUnchecked).is_strongly_connected());
}

TEST(TopologyTest, ReturnedNodeCannotReachBackIsNamed) {
  // 0 <-> 1 and 1 -> 2, but 2 sends nowhere: 0 cannot be reached from 2.
  const std::string message = config_error([] {
    Topology::from_edges("sink", 3, {{0, 1}, {1, 0}, {1, 2}});
  });
  EXPECT_NE(message.find("node 0 cannot be reached from node 2"), std::string::npos) << message;
}

TEST(TopologyTest, ColumnThatDoesNotSumToOneIsRejected) {
  std::vector<WeightedEdge> edges = {{0, 0, 0.5}, {0, 1, 0.5}, {1, 1, 0.5}, {1, 0, 0.4}};
  const std::string message =
      config_error([&] { Topology::from_weighted_edges("leaky", 2, edges); });
  EXPECT_NE(message.find("column 1"), std::string::npos) << message;
  EXPECT_NE(message.find("sums to 0.9"), std::string::npos) << message;
  EXPECT_NE(message.find("column-stochastic"), std::string::npos) << message;
  // Off by 1e-11: beyond the 1e-12 tolerance.
  edges[3].weight = 0.5 + 1e-11;
  EXPECT_NE(config_error([&] { Topology::from_weighted_edges("leaky", 2, edges); }), "");
  edges[3].weight = 0.5;
  EXPECT_EQ(config_error([&] { Topology::from_weighted_edges("ok", 2, edges); }), "");
}

TEST(TopologyTest, MissingSelfLoopAndNegativeWeightsAreRejected) {
  // Column-stochastic swap matrix, but nodes keep nothing for themselves.
  const std::string no_self = config_error([] {
    Topology::from_weighted_edges("swap", 2, {{0, 1, 1.0}, {1, 0, 1.0}});
  });
  EXPECT_NE(no_self.find("node 0 has no self-loop"), std::string::npos) << no_self;

  const std::string negative = config_error([] {
    Topology::from_weighted_edges("negative", 2, {{0, 0, 1.5}, {0, 1, -0.5}, {1, 1, 1.0}});
  });
  EXPECT_NE(negative.find("W[1][0] = -0.5"), std::string::npos) << negative;
}

TEST(TopologyTest, BadEdgeListsAreRejected) {
  EXPECT_NE(config_error([] {
              Topology::from_edges("x", 3, {{0, 3}});
            }).find("edge endpoint 3"),
            std::string::npos);
  EXPECT_NE(config_error([] {
              Topology::from_weighted_edges("x", 1, {{0, 0, 0.5}, {0, 0, 0.5}});
            }).find("given twice"),
            std::string::npos);
  EXPECT_NE(config_error([] { Topology::from_edges("x", 0, {}); }).find("at least 1 node; got 0"),
            std::string::npos);
  EXPECT_NE(config_error([] {
              Topology::from_matrix("x", 2, {1.0, 0.0, 0.0});
            }).find("expected n * n = 4"),
            std::string::npos);
}

TEST(TopologyTest, SingleNodeIsValid) {
  const Topology t = Topology::from_edges("solo", 1, {});
  EXPECT_EQ(t.num_edges(), 0);
  EXPECT_DOUBLE_EQ(t.self_weight(0), 1.0);
  EXPECT_TRUE(t.is_doubly_stochastic());
}

TEST(TopologyTest, StaticTopologyIsItsOwnSchedule) {
  const Topology t = ring(6);
  const TopologySchedule& schedule = t;
  EXPECT_TRUE(schedule.is_static());
  EXPECT_EQ(schedule.period(), 1);
  for (std::int64_t step : {0, 1, 7, 1000}) EXPECT_EQ(&schedule.at(step), &t);
  EXPECT_THROW(schedule.at(-1), UserError);
}

}  // namespace
}  // namespace lpdt::graph
