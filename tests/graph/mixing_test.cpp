#include "lpdt/graph/mixing.h"

#include <gtest/gtest.h>

#include <string>

#include "lpdt/core/error.h"
#include "lpdt/graph/builders.h"

namespace lpdt::graph {
namespace {

TEST(MixingTest, ParseAndName) {
  EXPECT_EQ(parse_mixing_rule("uniform"), MixingRule::kUniform);
  EXPECT_EQ(parse_mixing_rule("metropolis"), MixingRule::kMetropolis);
  EXPECT_EQ(mixing_rule_name(MixingRule::kMetropolis), "metropolis");
  try {
    parse_mixing_rule("max-degree");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "unknown mixing rule 'max-degree'; expected one of: uniform, metropolis");
  }
}

TEST(MixingTest, UniformIsColumnStochasticOnIrregularGraphs) {
  // Star with an extra arc: 0 <-> 1, 0 <-> 2, 0 <-> 3, 1 -> 2.
  const Topology t =
      Topology::from_edges("star", 4, {{0, 1}, {1, 0}, {0, 2}, {2, 0}, {0, 3}, {3, 0}, {1, 2}});
  // Node 0 has 3 out-neighbours: keeps 1/4 and sends 1/4 to each.
  for (std::int64_t i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(t.weight(i, 0), 0.25);
  EXPECT_DOUBLE_EQ(t.weight(0, 1), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(t.weight(2, 1), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(t.weight(0, 3), 0.5);
  EXPECT_FALSE(t.is_doubly_stochastic());
}

TEST(MixingTest, MetropolisIsSymmetricAndDoublyStochastic) {
  // An irregular undirected graph: path 0 - 1 - 2 - 3 plus the chord 1 - 3 and a triangle 3-4-5.
  const std::vector<std::pair<int, int>> links = {{0, 1}, {1, 2}, {2, 3}, {1, 3},
                                                  {3, 4}, {4, 5}, {5, 3}};
  std::vector<Edge> edges;
  for (const auto& [a, b] : links) {
    edges.push_back({a, b});
    edges.push_back({b, a});
  }
  const Topology t = Topology::from_edges("irregular", 6, edges, MixingRule::kMetropolis);
  EXPECT_EQ(t.mixing(), "metropolis");
  EXPECT_TRUE(t.is_symmetric());
  EXPECT_TRUE(t.is_doubly_stochastic());
  EXPECT_FALSE(t.is_regular());
  // d_1 = 3, d_3 = 4: W_13 = 1 / (1 + 4).
  EXPECT_DOUBLE_EQ(t.weight(1, 3), 0.2);
  EXPECT_DOUBLE_EQ(t.weight(0, 1), 0.25);
  EXPECT_DOUBLE_EQ(t.self_weight(0), 0.75);
  for (std::int64_t i = 0; i < 6; ++i) EXPECT_GT(t.self_weight(i), 0.0);

  for (const Topology& regular :
       {ring(8, MixingRule::kMetropolis), torus(4, 4, MixingRule::kMetropolis),
        complete(5, MixingRule::kMetropolis)}) {
    EXPECT_TRUE(regular.is_symmetric()) << regular.label();
    EXPECT_TRUE(regular.is_doubly_stochastic()) << regular.label();
  }
}

TEST(MixingTest, MetropolisOnADirectedGraphIsAConfigError) {
  try {
    directed_ring(5, MixingRule::kMetropolis);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("mixing 'metropolis' needs an undirected graph"), std::string::npos);
    EXPECT_NE(message.find("topology 'directed-ring' has the edge 0 -> 1 but not 1 -> 0"),
              std::string::npos)
        << message;
  }
  EXPECT_THROW(random_digraph(RandomGraphOptions(8, 1), MixingRule::kMetropolis), ConfigError);
}

}  // namespace
}  // namespace lpdt::graph
