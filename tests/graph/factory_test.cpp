#include "lpdt/graph/factory.h"

#include <gtest/gtest.h>

#include <string>

#include "lpdt/core/error.h"
#include "lpdt/graph/topology.h"

namespace lpdt::graph {
namespace {

template <typename F>
std::string config_error(F&& build) {
  try {
    build();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(FactoryTest, EveryNameBuilds) {
  for (const std::string& name : topology_names()) {
    const auto schedule = make_topology(TopologyOptions().name(name).num_nodes(16).seed(3));
    EXPECT_EQ(schedule->name(), name);
    EXPECT_EQ(schedule->num_nodes(), 16);
    EXPECT_EQ(schedule->is_static(), name != "one-peer-exponential") << name;
  }
  // Defaults: the official code's 8-node directed ring with uniform weights.
  const auto official = make_topology(TopologyOptions());
  EXPECT_EQ(official->name(), "directed-ring");
  EXPECT_EQ(official->at(0).self_weight(0), 0.5);
}

TEST(FactoryTest, UnknownNameListsTheAcceptedOnes) {
  EXPECT_EQ(config_error([] { make_topology(TopologyOptions().name("grid")); }),
            "unknown topology 'grid'; expected one of: directed-ring, ring, torus, complete, "
            "exponential, random, one-peer-exponential");
  EXPECT_NE(config_error([] {
              make_topology(TopologyOptions().mixing("max"));
            }).find("unknown mixing rule 'max'"),
            std::string::npos);
}

TEST(FactoryTest, TorusShape) {
  EXPECT_EQ(make_topology(TopologyOptions().name("torus").num_nodes(16))->label(), "torus 4x4");
  EXPECT_EQ(make_topology(TopologyOptions().name("torus").num_nodes(18))->label(), "torus 3x6");
  EXPECT_EQ(make_topology(TopologyOptions().name("torus").num_nodes(18).rows(6))->label(),
            "torus 6x3");
  EXPECT_EQ(make_topology(TopologyOptions().name("torus").num_nodes(18).cols(6))->label(),
            "torus 3x6");
  EXPECT_EQ(config_error([] { make_topology(TopologyOptions().name("torus").num_nodes(10)); }),
            "topology 'torus' needs a node count (graph.nodes; lpdt topo --nodes) that is a "
            "product rows x cols with rows, cols >= 3; got 10");
  EXPECT_NE(config_error([] {
              make_topology(TopologyOptions().name("torus").num_nodes(16).rows(3).cols(4));
            }).find("got a node count of 16"),
            std::string::npos);
  EXPECT_NE(config_error([] {
              make_topology(TopologyOptions().name("torus").num_nodes(16).rows(5));
            }).find("multiple"),
            std::string::npos);
}

TEST(FactoryTest, OptionsOfOtherTopologiesAreIgnored) {
  // A config always carries every field (the trainer passes rows and random_out_degree).
  const auto ring8 = make_topology(
      TopologyOptions().name("ring").rows(4).cols(2).random_out_degree(3).random_edge_probability(
          0.5));
  EXPECT_EQ(ring8->label(), "ring");
  EXPECT_EQ(ring8->at(0).out_degree(0), 2);
}

TEST(FactoryTest, BadMixingForTheTopologyIsRejected) {
  EXPECT_NE(config_error([] {
              make_topology(TopologyOptions().name("one-peer-exponential").mixing("metropolis"));
            }).find("got mixing 'metropolis'"),
            std::string::npos);
  EXPECT_NE(config_error([] {
              make_topology(TopologyOptions().name("exponential").mixing("metropolis"));
            }).find("needs an undirected graph"),
            std::string::npos);
}

TEST(FactoryTest, RandomOptionsAndSeed) {
  const auto a = make_topology(TopologyOptions().name("random").num_nodes(12).seed(5));
  const auto b = make_topology(TopologyOptions().name("random").num_nodes(12).seed(5));
  EXPECT_EQ(a->at(0).weights(), b->at(0).weights());
  const auto d3 =
      make_topology(TopologyOptions().name("random").num_nodes(12).random_out_degree(3));
  EXPECT_EQ(d3->at(0).out_degree(0), 3);
  const auto p =
      make_topology(TopologyOptions().name("random").num_nodes(12).random_edge_probability(0.5));
  EXPECT_EQ(p->label(), "random (edge probability 0.5, seed 0)");
  EXPECT_TRUE(
      make_topology(TopologyOptions().name("ring").mixing("metropolis"))->at(0).is_symmetric());
}

}  // namespace
}  // namespace lpdt::graph
