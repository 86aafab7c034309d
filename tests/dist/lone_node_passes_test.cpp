// Which nodes a rank layout computes alone in a pass where one process groups them, or the
// reverse (dist/lone_node_passes.h), worked out by hand for blocks and pass sizes.
#include "lpdt/dist/lone_node_passes.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace lpdt::dist {
namespace {

TEST(LoneNodePasses, AloneInPassIsTheLastPassOfOneNode) {
  EXPECT_TRUE(alone_in_pass(3, 3, 1, 16));  // a block of one node
  EXPECT_TRUE(alone_in_pass(16, 0, 17, 16));  // 16 + 1
  EXPECT_FALSE(alone_in_pass(15, 0, 17, 16));
  EXPECT_FALSE(alone_in_pass(0, 0, 17, 16));
  for (std::int64_t i = 0; i < 5; ++i) EXPECT_TRUE(alone_in_pass(i, 0, 5, 1)) << i;
  // 5 nodes in passes of 2: [0, 1] [2, 3] [4]; from 10: [10, 11] [12, 13] [14].
  for (std::int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(alone_in_pass(i, 0, 5, 2), i == 4) << i;
    EXPECT_EQ(alone_in_pass(10 + i, 10, 5, 2), i == 4) << i;
  }
}

TEST(LoneNodePasses, RanksOfOneNodeDifferFromOneProcessGroupingThem) {
  const auto automatic = [](std::int64_t k) { return std::min<std::int64_t>(k, 16); };
  const auto one = [](std::int64_t) { return std::int64_t{1}; };
  const auto two = [](std::int64_t) { return std::int64_t{2}; };
  EXPECT_EQ(nodes_passed_alone_differently(8, 8, automatic),
            (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE(nodes_passed_alone_differently(8, 4, automatic).empty());  // 2 per rank
  EXPECT_TRUE(nodes_passed_alone_differently(8, 3, automatic).empty());  // 3, 3, 2
  EXPECT_TRUE(nodes_passed_alone_differently(8, 8, one).empty());        // alone everywhere
  EXPECT_TRUE(nodes_passed_alone_differently(17, 1, automatic).empty());
  // 17 nodes: one process leaves node 16 alone; ranks of 9 and 8 nodes group it.
  EXPECT_EQ(nodes_passed_alone_differently(17, 2, automatic), (std::vector<std::int64_t>{16}));
  // 5 nodes in passes of 2: one process [0, 1] [2, 3] [4]; ranks [0, 1] [2] and [3, 4].
  EXPECT_EQ(nodes_passed_alone_differently(5, 2, two), (std::vector<std::int64_t>{2, 4}));
}

TEST(LoneNodePasses, TheNoteNamesTheNodesAndTheSettingsThatMatchTheSimulator) {
  const std::string one = lone_node_pass_note({16}, 16);
  EXPECT_NE(one.find("node 16: computed in a pass of one node"), std::string::npos) << one;
  EXPECT_NE(one.find("(passes of 16 there)"), std::string::npos) << one;
  EXPECT_NE(one.find("run.nodes_per_pass = 1"), std::string::npos) << one;
  const std::string many = lone_node_pass_note({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 16);
  EXPECT_NE(many.find("nodes 0, 1, 2, 3, 4, 5, 6, 7, ... (10 nodes)"), std::string::npos) << many;
}

}  // namespace
}  // namespace lpdt::dist
