#include "lpdt/graph/export.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <tuple>

#include "lpdt/graph/builders.h"
#include "lpdt/graph/spectral.h"

namespace lpdt::graph {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ExportTest, DotListsEveryArcWithItsWeight) {
  const Topology t = directed_ring(4);
  const std::string dot = to_dot(t);
  EXPECT_TRUE(dot.starts_with("digraph \"directed-ring\" {")) << dot;
  EXPECT_TRUE(dot.ends_with("}\n"));
  // Parse the arcs back: exactly the ring's four.
  const std::regex arc(R"re((\d+) -> (\d+) \[label="([0-9.e-]+)"\];)re");
  std::set<std::tuple<int, int, double>> arcs;
  for (auto it = std::sregex_iterator(dot.begin(), dot.end(), arc); it != std::sregex_iterator();
       ++it) {
    arcs.emplace(std::stoi((*it)[1]), std::stoi((*it)[2]), std::stod((*it)[3]));
  }
  EXPECT_EQ(arcs, (std::set<std::tuple<int, int, double>>{
                      {0, 1, 0.5}, {1, 2, 0.5}, {2, 3, 0.5}, {3, 0, 0.5}}));
  EXPECT_TRUE(contains(dot, "0 [label=\"0\\nself 0.5\"];")) << dot;

  // Undirected: two arcs per link.
  const std::string torus_dot = to_dot(torus(3, 3));
  EXPECT_TRUE(contains(torus_dot, "  0 -> 1 [label=\"0.2\"];"));
  EXPECT_TRUE(contains(torus_dot, "  1 -> 0 [label=\"0.2\"];"));
}

TEST(ExportTest, DotOfATimeVaryingScheduleLabelsSteps) {
  const std::string dot = to_dot(static_cast<const TopologySchedule&>(one_peer_exponential(4)));
  EXPECT_TRUE(contains(dot, "0 -> 1 [label=\"t=0: 0.5\"];")) << dot;
  EXPECT_TRUE(contains(dot, "0 -> 2 [label=\"t=1: 0.5\"];")) << dot;
}

TEST(ExportTest, JsonParsesAndHoldsTheGraph) {
  const Topology t = torus(3, 3, MixingRule::kMetropolis);
  const nlohmann::json j = nlohmann::json::parse(to_json(t));
  EXPECT_EQ(j["name"], "torus");
  EXPECT_EQ(j["label"], "torus 3x3");
  EXPECT_EQ(j["mixing"], "metropolis");
  EXPECT_EQ(j["num_nodes"], 9);
  EXPECT_EQ(j["period"], 1);
  EXPECT_EQ(j["num_edges"], 36);
  EXPECT_EQ(j["undirected"], true);
  EXPECT_EQ(j["doubly_stochastic"], true);
  EXPECT_DOUBLE_EQ(j["spectral_gap"].get<double>(), spectral_gap(t));
  ASSERT_EQ(j["edges"].size(), 36u);
  std::set<std::pair<int, int>> edges;
  for (const auto& e : j["edges"]) {
    edges.emplace(e["src"].get<int>(), e["dst"].get<int>());
    EXPECT_DOUBLE_EQ(e["weight"].get<double>(), 0.2);
  }
  EXPECT_TRUE(edges.count({0, 1}) && edges.count({0, 2}) && edges.count({0, 3}) &&
              edges.count({0, 6}));
  ASSERT_EQ(j["nodes"].size(), 9u);
  EXPECT_EQ(j["nodes"][4]["in_degree"], 4);
  EXPECT_EQ(j["nodes"][4]["out_neighbors"], nlohmann::json({1, 3, 5, 7}));
  // The matrix round-trips exactly (17 significant digits).
  for (int i = 0; i < 9; ++i) {
    for (int k = 0; k < 9; ++k) EXPECT_EQ(j["mixing_matrix"][i][k].get<double>(), t.weight(i, k));
  }
  // Not doubly stochastic: sigma2 is null.
  const nlohmann::json r = nlohmann::json::parse(to_json(random_digraph(RandomGraphOptions(6, 1))));
  EXPECT_TRUE(r["sigma2"].is_null());
  EXPECT_EQ(r["doubly_stochastic"], false);
}

TEST(ExportTest, JsonOfATimeVaryingSchedule) {
  const nlohmann::json j =
      nlohmann::json::parse(to_json(static_cast<const TopologySchedule&>(one_peer_exponential(8))));
  EXPECT_EQ(j["period"], 3);
  ASSERT_EQ(j["steps"].size(), 3u);
  EXPECT_EQ(j["steps"][2]["edges"][0], nlohmann::json({{"src", 0}, {"dst", 4}, {"weight", 0.5}}));
  EXPECT_NEAR(j["spectral_gap"].get<double>(), 1.0, 1e-10);
}

// A caller that has the spectral figures already (a training run) passes them in: the JSON is
// the same as when they are computed, and it takes them as given (a made-up gap shows).
TEST(ExportTest, JsonTakesTheSpectralFiguresACallerHas) {
  const Topology t = random_digraph(RandomGraphOptions(12, 3));
  const TopologySchedule& as_schedule = t;
  EXPECT_EQ(to_json(as_schedule, spectral_info(t)), to_json(t));
  SpectralInfo made_up;
  made_up.lambda2_modulus = 0.875;
  made_up.spectral_gap = 0.125;
  const nlohmann::json j = nlohmann::json::parse(to_json(as_schedule, made_up));
  EXPECT_EQ(j["spectral_gap"].get<double>(), 0.125);
  EXPECT_EQ(j["lambda2_modulus"].get<double>(), 0.875);
  const PeriodicSchedule periodic = one_peer_exponential(8);
  const TopologySchedule& schedule = periodic;
  EXPECT_EQ(to_json(schedule, spectral_info(schedule)), to_json(schedule));
  EXPECT_EQ(nlohmann::json::parse(to_json(schedule, made_up))["spectral_gap"].get<double>(), 0.125);
}

TEST(ExportTest, DescribeIsReadable) {
  const std::string text = describe(torus(4, 4));
  EXPECT_TRUE(contains(text, "topology: torus 4x4 [torus], 16 nodes, mixing uniform")) << text;
  EXPECT_TRUE(contains(text, "64 directed (32 undirected links)")) << text;
  EXPECT_TRUE(contains(text, "spectral gap: 0.4 ")) << text;
  EXPECT_TRUE(contains(text, "   3    4    4     0.2  0 2 7 15 | 0 2 7 15")) << text;
  EXPECT_TRUE(contains(text, "mixing matrix W")) << text;
  // Weights under 0.1 fill their 6 characters: a space still parts them (11 nodes: 1/11).
  EXPECT_TRUE(contains(describe(complete(11)), "   0 0.0909 0.0909 0.0909"))
      << describe(complete(11));
  // No matrix for n > 16.
  EXPECT_FALSE(contains(describe(ring(17)), "mixing matrix W"));
  const std::string random_text = describe(random_digraph(RandomGraphOptions(8, 2)));
  EXPECT_TRUE(contains(random_text, "needs push-sum")) << random_text;
  const std::string tv = describe(static_cast<const TopologySchedule&>(one_peer_exponential(8)));
  EXPECT_TRUE(contains(tv, "time-varying with period 3")) << tv;
  EXPECT_TRUE(contains(tv, "step 2 (one-peer-exponential hop 4), mixing uniform: 0->4 1->5")) << tv;
}

}  // namespace
}  // namespace lpdt::graph
