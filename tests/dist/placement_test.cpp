// Node placement of multi-process runs: contiguous blocks that tile the nodes, balanced, and an
// owner function that inverts them.
#include <gtest/gtest.h>

#include "lpdt/core/error.h"
#include "lpdt/dist/placement.h"

namespace lpdt::dist {
namespace {

TEST(Placement, BlocksTileTheNodesAndOwnerInvertsThem) {
  for (std::int64_t total : {1, 4, 7, 8, 16, 33}) {
    for (int ranks = 1; ranks <= total && ranks <= 9; ++ranks) {
      std::int64_t next = 0, smallest = total, largest = 0;
      for (int r = 0; r < ranks; ++r) {
        const NodeRange block = hosted_nodes(r, ranks, total);
        EXPECT_EQ(block.first, next) << total << " nodes, " << ranks << " ranks, rank " << r;
        EXPECT_EQ(block.total, total);
        smallest = std::min(smallest, block.count);
        largest = std::max(largest, block.count);
        for (std::int64_t node = block.first; node < block.end(); ++node) {
          EXPECT_EQ(owner_rank(node, ranks, total), r) << "node " << node;
        }
        next = block.end();
      }
      EXPECT_EQ(next, total);
      EXPECT_LE(largest - smallest, 1);  // balanced
      EXPECT_GE(smallest, 1);
    }
  }
}

TEST(Placement, MoreRanksThanNodesIsAConfigError) {
  try {
    hosted_nodes(0, 5, 4);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("graph.nodes = 4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lpdt::dist
