#include "lpdt/graph/builders.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "lpdt/core/error.h"

namespace lpdt::graph {
namespace {

using Ids = std::vector<std::int64_t>;

template <typename F>
std::string config_error(F&& build) {
  try {
    build();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// The invariants every builder promises.
void expect_valid(const Topology& t) {
  const std::int64_t n = t.num_nodes();
  for (std::int64_t j = 0; j < n; ++j) {
    double column = 0.0;
    for (std::int64_t i = 0; i < n; ++i) {
      EXPECT_GE(t.weight(i, j), 0.0);
      column += t.weight(i, j);
    }
    EXPECT_NEAR(column, 1.0, kStochasticTolerance) << t.label() << " column " << j;
    EXPECT_GT(t.self_weight(j), 0.0) << t.label() << " node " << j;
  }
  EXPECT_TRUE(t.is_strongly_connected());
}

TEST(BuildersTest, DirectedRingIsTheOfficialRing) {
  const Topology t = directed_ring(8);
  expect_valid(t);
  EXPECT_EQ(t.name(), "directed-ring");
  for (std::int64_t i = 0; i < 8; ++i) {
    EXPECT_EQ(t.out_neighbors(i), Ids{(i + 1) % 8});
    EXPECT_EQ(t.in_neighbors(i), Ids{(i + 7) % 8});
    EXPECT_DOUBLE_EQ(t.self_weight(i), 0.5);
    EXPECT_DOUBLE_EQ(t.weight((i + 1) % 8, i), 0.5);
  }
  EXPECT_TRUE(t.is_doubly_stochastic());
  EXPECT_FALSE(t.is_undirected());
  EXPECT_THROW(directed_ring(8, MixingRule::kMetropolis), ConfigError);
}

TEST(BuildersTest, RingLinksBothWays) {
  const Topology t = ring(8);
  expect_valid(t);
  EXPECT_EQ(t.out_neighbors(0), (Ids{1, 7}));
  EXPECT_EQ(t.in_neighbors(0), (Ids{1, 7}));
  EXPECT_EQ(t.num_edges(), 16);
  EXPECT_TRUE(t.is_undirected());
  EXPECT_TRUE(t.is_regular());
  EXPECT_DOUBLE_EQ(t.weight(1, 0), 1.0 / 3.0);
  // n = 2: the two neighbours coincide.
  EXPECT_EQ(ring(2).out_neighbors(0), Ids{1});
  EXPECT_EQ(ring(1).num_edges(), 0);
}

TEST(BuildersTest, TorusIsARealTorus) {
  const Topology t = torus(4, 4);
  expect_valid(t);
  EXPECT_EQ(t.label(), "torus 4x4");
  for (std::int64_t i = 0; i < 16; ++i) {
    EXPECT_EQ(t.out_degree(i), 4);
    EXPECT_EQ(t.in_degree(i), 4);
    EXPECT_DOUBLE_EQ(t.self_weight(i), 0.2);
  }
  // Node 3 = (row 0, col 3): left 2, right wraps to 0, down 7, up wraps to 15. The official
  // code's GridGraph (circulant C16(1, 4)) would give 2, 4, 7, 15 instead.
  EXPECT_EQ(t.out_neighbors(3), (Ids{0, 2, 7, 15}));
  EXPECT_EQ(t.out_neighbors(5), (Ids{1, 4, 6, 9}));
  EXPECT_EQ(t.out_neighbors(12), (Ids{0, 8, 13, 15}));
  EXPECT_TRUE(t.is_undirected());
  EXPECT_TRUE(t.is_doubly_stochastic());

  const Topology rect = torus(3, 5);
  expect_valid(rect);
  EXPECT_EQ(rect.out_neighbors(0), (Ids{1, 4, 5, 10}));
  EXPECT_NE(config_error([] { torus(2, 8); }).find("rows, cols >= 3; got 2 x 8"),
            std::string::npos);
}

TEST(BuildersTest, MostSquareTorusFactorisation) {
  EXPECT_EQ(most_square_torus(16).rows, 4);
  EXPECT_EQ(most_square_torus(36).rows, 6);
  EXPECT_EQ(most_square_torus(24).rows, 4);
  EXPECT_EQ(most_square_torus(24).cols, 6);
  EXPECT_EQ(most_square_torus(27).rows, 3);
  EXPECT_EQ(most_square_torus(27).cols, 9);
  EXPECT_EQ(config_error([] { most_square_torus(10); }),
            "topology 'torus' needs a node count (graph.nodes; lpdt topo --nodes) that is a "
            "product rows x cols with rows, cols >= 3; got 10");
  EXPECT_NE(config_error([] { most_square_torus(8); }), "");  // 8 = 2 x 4 only
  EXPECT_NE(config_error([] { most_square_torus(13); }), "");
}

TEST(BuildersTest, CompleteGraph) {
  const Topology t = complete(6);
  expect_valid(t);
  EXPECT_EQ(t.num_edges(), 30);
  EXPECT_EQ(t.out_neighbors(2), (Ids{0, 1, 3, 4, 5}));
  for (std::int64_t i = 0; i < 6; ++i) {
    for (std::int64_t j = 0; j < 6; ++j) EXPECT_DOUBLE_EQ(t.weight(i, j), 1.0 / 6.0);
  }
}

TEST(BuildersTest, ExponentialGraphHopsByPowersOfTwo) {
  const Topology t8 = exponential(8);
  expect_valid(t8);
  EXPECT_EQ(t8.out_neighbors(0), (Ids{1, 2, 4}));
  EXPECT_EQ(t8.in_neighbors(0), (Ids{4, 6, 7}));
  EXPECT_EQ(t8.out_neighbors(6), (Ids{0, 2, 7}));
  EXPECT_TRUE(t8.is_regular());
  EXPECT_FALSE(t8.is_undirected());
  EXPECT_TRUE(t8.is_doubly_stochastic());
  EXPECT_DOUBLE_EQ(t8.self_weight(0), 0.25);

  const Topology t16 = exponential(16);  // m = 0..3
  EXPECT_EQ(t16.out_neighbors(0), (Ids{1, 2, 4, 8}));
  const Topology t9 = exponential(9);  // floor(log2 8) = 3: hops 1, 2, 4, 8
  EXPECT_EQ(t9.out_neighbors(0), (Ids{1, 2, 4, 8}));
  const Topology t6 = exponential(6);  // hops 1, 2, 4
  EXPECT_EQ(t6.out_neighbors(5), (Ids{0, 1, 3}));
  EXPECT_THROW(exponential(8, MixingRule::kMetropolis), ConfigError);
}

TEST(BuildersTest, RandomDigraphIsStronglyConnectedIrregularAndSeeded) {
  const Topology a = random_digraph(RandomGraphOptions(16, 7));
  expect_valid(a);
  EXPECT_EQ(a.label(), "random (out-degree 2, seed 7)");
  std::set<std::int64_t> in_degrees;
  for (std::int64_t i = 0; i < 16; ++i) {
    EXPECT_EQ(a.out_degree(i), 2);
    in_degrees.insert(a.in_degree(i));
  }
  EXPECT_GT(in_degrees.size(), 1u) << "in-degrees should be irregular";
  EXPECT_FALSE(a.is_regular());
  EXPECT_FALSE(a.is_doubly_stochastic());

  const Topology same = random_digraph(RandomGraphOptions(16, 7));
  EXPECT_EQ(same.weights(), a.weights());
  const Topology other = random_digraph(RandomGraphOptions(16, 8));
  EXPECT_NE(other.weights(), a.weights());

  // Many seeds, many sizes: always strongly connected with the requested out-degree.
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    for (std::int64_t n : {2, 3, 5, 12}) {
      const std::int64_t d = std::min<std::int64_t>(3, n - 1);
      const Topology t = random_digraph(RandomGraphOptions(n, seed).out_degree(d));
      expect_valid(t);
      for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(t.out_degree(i), d);
    }
  }
}

TEST(BuildersTest, RandomDigraphWithEdgeProbability) {
  const Topology cycle = random_digraph(RandomGraphOptions(10, 3).edge_probability(0.0));
  expect_valid(cycle);
  EXPECT_EQ(cycle.num_edges(), 10);  // just the Hamiltonian cycle
  for (std::int64_t i = 0; i < 10; ++i) EXPECT_EQ(cycle.out_degree(i), 1);
  const Topology full = random_digraph(RandomGraphOptions(10, 3).edge_probability(1.0));
  EXPECT_EQ(full.num_edges(), 90);
  const Topology half = random_digraph(RandomGraphOptions(10, 3).edge_probability(0.3));
  expect_valid(half);
  EXPECT_GT(half.num_edges(), 10);
  EXPECT_LT(half.num_edges(), 90);

  EXPECT_NE(config_error([] {
              random_digraph(RandomGraphOptions(10, 3).out_degree(2).edge_probability(0.5));
            }).find("not both"),
            std::string::npos);
  EXPECT_NE(config_error([] {
              random_digraph(RandomGraphOptions(10, 3).out_degree(10));
            }).find("out-degree in [1, n - 1] = [1, 9]; got 10"),
            std::string::npos);
  EXPECT_NE(config_error([] {
              random_digraph(RandomGraphOptions(10, 3).edge_probability(1.5));
            }).find("edge probability in [0, 1]"),
            std::string::npos);
  EXPECT_NE(config_error([] { random_digraph(RandomGraphOptions(1, 3)); }).find("at least 2"),
            std::string::npos);
}

TEST(BuildersTest, NodeCountsAreChecked) {
  EXPECT_EQ(config_error([] { ring(0); }), "topology 'ring' needs at least 1 node; got 0");
  EXPECT_EQ(config_error([] { directed_ring(-3); }),
            "topology 'directed-ring' needs at least 1 node; got -3");
  EXPECT_EQ(config_error([] { one_peer_exponential(1); }),
            "topology 'one-peer-exponential' needs at least 2 nodes; got 1");
}

}  // namespace
}  // namespace lpdt::graph
