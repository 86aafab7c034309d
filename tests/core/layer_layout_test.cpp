// The layout of a node's parameters: segments tile [0, P) in order; a dimension below 1 is
// refused where it is given, naming the segment.
#include <gtest/gtest.h>

#include <string>

#include "lpdt/core/error.h"
#include "lpdt/core/layer_layout.h"

namespace lpdt {
namespace {

TEST(LayerLayout, SegmentsTileTheRowInOrder) {
  LayerLayout layout;
  EXPECT_EQ(layout.append("weight", {3, 4}), 0u);
  EXPECT_EQ(layout.append("bias", {3}), 1u);
  EXPECT_EQ(layout.total_numel, 15);
  EXPECT_EQ(layout.segments[1].offset, 12);
  EXPECT_EQ(layout.segments[1].numel, 3);
}

TEST(LayerLayout, ADimensionBelowOneIsNamed) {
  for (const std::int64_t bad : {std::int64_t{0}, std::int64_t{-2}}) {
    LayerLayout layout;
    layout.append("ok", {3});
    try {
      layout.append("conv.weight", {4, bad, 3});
      ADD_FAILURE() << "accepted a dimension " << bad;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("segment 'conv.weight' has shape [4, " +
                                           std::to_string(bad) + ", 3]"),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(layout.segments.size(), 1u);  // nothing appended
    EXPECT_EQ(layout.total_numel, 3);
  }
}

}  // namespace
}  // namespace lpdt
