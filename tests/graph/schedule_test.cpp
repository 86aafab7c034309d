#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lpdt/core/error.h"
#include "lpdt/graph/builders.h"
#include "lpdt/graph/periodic_schedule.h"

namespace lpdt::graph {
namespace {

using Ids = std::vector<std::int64_t>;

TEST(ScheduleTest, OnePeerExponentialCyclesWithPeriodTau) {
  const PeriodicSchedule schedule = one_peer_exponential(8);
  ASSERT_EQ(schedule.period(), 3);  // tau = ceil(log2 8)
  EXPECT_FALSE(schedule.is_static());
  EXPECT_EQ(schedule.num_nodes(), 8);
  EXPECT_EQ(schedule.name(), "one-peer-exponential");
  for (std::int64_t t = 0; t < 12; ++t) {
    const Topology& g = schedule.at(t);
    const std::int64_t hop = std::int64_t{1} << (t % 3);
    EXPECT_EQ(&g, &schedule.at(t + 3));
    for (std::int64_t i = 0; i < 8; ++i) {
      EXPECT_EQ(g.out_neighbors(i), Ids{(i + hop) % 8}) << "step " << t << " node " << i;
      EXPECT_DOUBLE_EQ(g.self_weight(i), 0.5);
      EXPECT_DOUBLE_EQ(g.weight((i + hop) % 8, i), 0.5);
    }
    EXPECT_TRUE(g.is_doubly_stochastic());
  }
  // Hop 2 on 8 nodes splits into two cycles: each step alone need not be strongly connected.
  EXPECT_TRUE(schedule.at(0).is_strongly_connected());
  EXPECT_FALSE(schedule.at(1).is_strongly_connected());
  EXPECT_FALSE(schedule.at(2).is_strongly_connected());
  EXPECT_THROW(schedule.at(-1), UserError);
}

TEST(ScheduleTest, PeriodIsCeilLog2) {
  EXPECT_EQ(one_peer_exponential(2).period(), 1);
  EXPECT_EQ(one_peer_exponential(3).period(), 2);
  EXPECT_EQ(one_peer_exponential(5).period(), 3);
  EXPECT_EQ(one_peer_exponential(16).period(), 4);
  EXPECT_EQ(one_peer_exponential(17).period(), 5);
  const PeriodicSchedule s5 = one_peer_exponential(5);
  EXPECT_EQ(s5.at(2).out_neighbors(3), Ids{2});  // 3 + 4 mod 5
}

TEST(ScheduleTest, UnionMustBeStronglyConnected) {
  // Two steps that both stay inside {0, 1} and {2, 3}: the union never links the halves.
  auto pairs = [](std::int64_t a, std::int64_t b) {
    return Topology::from_edges("pairs", 4, {{a, b}, {b, a}}, MixingRule::kUniform,
                                Connectivity::kUnchecked);
  };
  try {
    PeriodicSchedule("split", {pairs(0, 1), pairs(2, 3)});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("union of its graphs over one period (2 steps) is not "
                                         "strongly connected"),
              std::string::npos)
        << e.what();
  }
  // Adding a step that links the halves both ways fixes it.
  const PeriodicSchedule joined("joined", {pairs(0, 1), pairs(2, 3), pairs(1, 2), pairs(3, 0)});
  EXPECT_EQ(joined.period(), 4);
  EXPECT_EQ(joined.label(), "joined");

  EXPECT_THROW(PeriodicSchedule("empty", {}), ConfigError);
  EXPECT_THROW(PeriodicSchedule("mixed", {ring(4), ring(5)}), ConfigError);
}

}  // namespace
}  // namespace lpdt::graph
