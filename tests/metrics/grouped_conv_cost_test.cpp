// The cost model of grouped and depthwise convolutions (TracedLayer::groups): each output
// channel reads in_channels / groups inputs, counted here by a plain loop over the taps.
#include <gtest/gtest.h>

#include <cstdint>

#include "lpdt/metrics/cost_model.h"

namespace lpdt::metrics {
namespace {

// Forward multiply-accumulates of a grouped conv, tap by tap: output channel o of group
// o / (cout / g) reads the cin / g input channels of its group over a K x K window.
double grouped_conv_macs_by_loops(std::int64_t b, std::int64_t cin, std::int64_t cout,
                                  std::int64_t groups, std::int64_t k, std::int64_t s,
                                  std::int64_t p, std::int64_t h) {
  double macs = 0;
  for (std::int64_t o = 0; o < cout; ++o) {
    const std::int64_t group = o / (cout / groups);
    for (std::int64_t c = 0; c < cin; ++c) {
      if (c / (cin / groups) != group) continue;  // another group's input channel
      for (std::int64_t y = -p; y + k <= h + p; y += s) {
        for (std::int64_t x = -p; x + k <= h + p; x += s) macs += static_cast<double>(k * k);
      }
    }
  }
  return macs * static_cast<double>(b);
}

TEST(GroupedConvCost, OpsFollowTheChannelsEachOutputReads) {
  const struct {
    std::int64_t cin, cout, groups, k, s, p, h;
  } cases[] = {{32, 32, 32, 3, 1, 1, 8},  // depthwise
               {96, 96, 96, 3, 2, 1, 9},
               {8, 12, 4, 3, 1, 0, 7},
               {16, 24, 1, 1, 1, 0, 5}};  // dense 1x1
  for (const auto& c : cases) {
    TracedLayer layer;
    layer.op = TracedOp::kConv;
    layer.batch = 2;
    layer.in_channels = c.cin;
    layer.out_channels = c.cout;
    layer.groups = c.groups;
    layer.kernel = c.k;
    layer.stride = c.s;
    layer.padding = c.p;
    layer.height = layer.width = c.h;
    const double macs = grouped_conv_macs_by_loops(2, c.cin, c.cout, c.groups, c.k, c.s, c.p, c.h);
    const OpCounts inference = count_ops(layer, CostPhase::kInference);
    EXPECT_DOUBLE_EQ(inference.mults, macs) << "groups " << c.groups;
    EXPECT_DOUBLE_EQ(inference.adds, macs);
    EXPECT_DOUBLE_EQ(count_ops(layer, CostPhase::kTraining).mults, 3 * macs);
    // The weight quantization row quantizes the cout * cin / g * K^2 weights.
    layer.op = TracedOp::kWeightQuantization;
    EXPECT_DOUBLE_EQ(count_ops(layer, CostPhase::kTraining).adds,
                     2.0 * static_cast<double>(c.cout * (c.cin / c.groups) * c.k * c.k));
  }
}

}  // namespace
}  // namespace lpdt::metrics
