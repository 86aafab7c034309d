// The cost model against its equations: the paper's Tables 7 and 9 recomputed by plain loops
// over the operations they count, and the memory model against its definition.
#include "lpdt/metrics/cost_model.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace lpdt::metrics {
namespace {

// Multiply-accumulates of one convolution's forward pass, counted tap by tap: every output
// position of every output channel reads Cin x K x K inputs (padding taps included, as the
// paper's formula counts them).
double conv_macs_by_loops(std::int64_t b, std::int64_t cin, std::int64_t cout, std::int64_t k,
                          std::int64_t s, std::int64_t p, std::int64_t h, std::int64_t w) {
  double macs = 0;
  for (std::int64_t y = -p; y + k <= h + p; y += s) {
    for (std::int64_t x = -p; x + k <= w + p; x += s) macs += 1;
  }
  return macs * static_cast<double>(b * cout * cin * k * k);
}

TracedLayer conv(std::int64_t b, std::int64_t cin, std::int64_t cout, std::int64_t k,
                 std::int64_t s, std::int64_t p, std::int64_t h, std::int64_t w) {
  TracedLayer layer;
  layer.op = TracedOp::kConv;
  layer.batch = b;
  layer.in_channels = cin;
  layer.out_channels = cout;
  layer.kernel = k;
  layer.stride = s;
  layer.padding = p;
  layer.height = h;
  layer.width = w;
  return layer;
}

TEST(CostModel, ConvolutionCountsEqualTheTapsOfAPlainLoop) {
  struct Geometry {
    std::int64_t b, cin, cout, k, s, p, h, w;
  };
  for (const Geometry g : {Geometry{32, 3, 16, 3, 1, 1, 32, 32}, Geometry{7, 16, 32, 3, 2, 1, 32, 32},
                           Geometry{5, 16, 32, 1, 2, 0, 31, 29}, Geometry{2, 6, 16, 5, 1, 0, 14, 14}}) {
    const TracedLayer layer = conv(g.b, g.cin, g.cout, g.k, g.s, g.p, g.h, g.w);
    const double macs = conv_macs_by_loops(g.b, g.cin, g.cout, g.k, g.s, g.p, g.h, g.w);
    const OpCounts inference = count_ops(layer, CostPhase::kInference);
    const OpCounts training = count_ops(layer, CostPhase::kTraining);
    EXPECT_DOUBLE_EQ(inference.adds, macs);
    EXPECT_DOUBLE_EQ(inference.mults, macs);
    // Table 7: forward, the layer gradient and the weight gradient, each as many products.
    EXPECT_DOUBLE_EQ(training.adds, 3 * macs);
    EXPECT_DOUBLE_EQ(training.mults, 3 * macs);
  }
}

TEST(CostModel, PerElementRowsFollowTables7And9) {
  TracedLayer layer;
  layer.batch = 4;
  layer.in_channels = layer.out_channels = 8;
  layer.height = 6;
  layer.width = 5;
  const double bcl = 4.0 * 8 * 30;
  struct Row {
    TracedOp op;
    double train_adds, train_mults, infer_adds, infer_mults;
  };
  for (const Row row : {Row{TracedOp::kBatchNormRelu, 9 * bcl, 6 * bcl + 7 * 8, 3 * bcl, 2 * bcl + 3 * 8},
                        Row{TracedOp::kEvoNorm, 6 * bcl, 10 * bcl + 5 * 8, 2 * bcl, 4 * bcl + 2 * 8},
                        Row{TracedOp::kSkipConnection, 2 * bcl, 0, 2 * bcl, 0},
                        Row{TracedOp::kAveragePool, bcl, 2 * 4 * 8, bcl, 4 * 8},
                        Row{TracedOp::kActivationQuantization, 2 * bcl, 4 * bcl, 0, 0}}) {
    layer.op = row.op;
    SCOPED_TRACE(to_string(row.op));
    EXPECT_DOUBLE_EQ(count_ops(layer, CostPhase::kTraining).adds, row.train_adds);
    EXPECT_DOUBLE_EQ(count_ops(layer, CostPhase::kTraining).mults, row.train_mults);
    EXPECT_DOUBLE_EQ(count_ops(layer, CostPhase::kInference).adds, row.infer_adds);
    EXPECT_DOUBLE_EQ(count_ops(layer, CostPhase::kInference).mults, row.infer_mults);
  }
  TracedLayer weight = conv(1, 16, 32, 3, 1, 1, 1, 1);
  weight.op = TracedOp::kWeightQuantization;
  EXPECT_DOUBLE_EQ(count_ops(weight, CostPhase::kTraining).adds, 2.0 * 16 * 32 * 9);
  EXPECT_DOUBLE_EQ(count_ops(weight, CostPhase::kInference).mults, 4.0 * 16 * 32 * 9);
}

TEST(CostModel, EnergyUsesThePrecisionsEnergies) {
  const OpCounts ops{1e9, 2e9};
  const EnergyTable horowitz;
  EXPECT_DOUBLE_EQ(energy_mj(ops, horowitz, false), (1e9 * 0.9 + 2e9 * 3.7) * 1e-9);
  EXPECT_DOUBLE_EQ(energy_mj(ops, horowitz, true), (1e9 * 0.03 + 2e9 * 0.2) * 1e-9);
  // With as many additions as multiplications the ratio is (0.9 + 3.7) / (0.03 + 0.2) = 20, the
  // paper's "~20x".
  const OpCounts balanced{1e9, 1e9};
  EXPECT_NEAR(energy_mj(balanced, horowitz, false) / energy_mj(balanced, horowitz, true), 20.0,
              1e-12);
}

TEST(CostModel, MemoryBreakdownFollowsItsDefinition) {
  std::vector<TracedLayer> trace(2);
  trace[0].batch = 3;
  trace[0].saved_per_sample = 100;
  trace[1].batch = 3;
  trace[1].saved_per_sample = 10;
  MemoryInputs in;
  in.params = 1000;
  in.optimizer_copies = 1;
  in.algorithm_copies = 2;
  in.message_bytes = 500;
  in.in_degree = 2;
  const MemoryBreakdown fp32 = training_memory(trace, in);
  EXPECT_DOUBLE_EQ(fp32.weights, 4000);
  EXPECT_DOUBLE_EQ(fp32.activations, 330 * 4);
  EXPECT_DOUBLE_EQ(fp32.gradients, 4000);
  EXPECT_DOUBLE_EQ(fp32.optimizer, 4000);
  EXPECT_DOUBLE_EQ(fp32.communication, 2 * 4000 + 3 * 500);
  EXPECT_DOUBLE_EQ(fp32.total(), 4000 + 1320 + 4000 + 4000 + 9500);
  in.low_precision = true;
  const MemoryBreakdown int8 = training_memory(trace, in);
  EXPECT_DOUBLE_EQ(int8.weights, 5000);  // float master weights and the 8-bit working copy
  EXPECT_DOUBLE_EQ(int8.activations, 330);
  EXPECT_DOUBLE_EQ(inference_memory(1000, false).total(), 4000);
  EXPECT_DOUBLE_EQ(inference_memory(1000, true).total(), 1000);
}

}  // namespace
}  // namespace lpdt::metrics
