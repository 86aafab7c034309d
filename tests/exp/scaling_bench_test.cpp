// `lpdt bench --scaling` on a tiny model: rows for every node count, figures that agree with each
// other, memory that grows with the node count, and clear errors for bad options.
#include "lpdt/exp/scaling_bench.h"

#include <gtest/gtest.h>

#include "lpdt/core/error.h"

namespace lpdt::exp {
namespace {

ScalingBenchOptions tiny() {
  ScalingBenchOptions o;
  o.arch = "mlp";
  o.nodes = {1, 40};
  o.batch_size = 4;
  o.steps = 2;
  o.warmup_steps = 1;
  o.threads = 1;
  o.size = 12;
  return o;
}

TEST(ScalingBench, RowsAreConsistent) {
  std::vector<std::string> lines;
  const auto rows = run_scaling_bench(tiny(), [&](const std::string& l) { lines.push_back(l); });
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(lines.size(), 2u + rows.size());  // title, header, one line per row
  for (const auto& r : rows) {
    EXPECT_GT(r.step_ms, 0.0);
    EXPECT_DOUBLE_EQ(r.ms_per_node_step, r.step_ms / static_cast<double>(r.nodes));
    EXPECT_NEAR(r.images_per_s, r.nodes * 4 / (r.step_ms / 1000.0), 1e-6 * r.images_per_s);
    EXPECT_GT(r.peak_rss_mib, 0.0);
    EXPECT_GE(r.page_faults_per_step, 0.0);
    EXPECT_GE(r.warmup_page_faults_per_step, 0.0);
  }
  EXPECT_EQ(rows[0].nodes, 1);
  EXPECT_EQ(rows[1].nodes, 40);
  // 40 nodes hold 40 copies of the parameters, momentum and Choco's public copies.
  EXPECT_GT(rows[1].state_mib, rows[0].state_mib);
  // And so does their checkpoint, written and read back: 40 times one node's, but for the few
  // KiB every checkpoint holds (the generator's state, the JSON part).
  for (const auto& r : rows) {
    EXPECT_GT(r.checkpoint_mib, 0.0);
    EXPECT_GT(r.checkpoint_write_ms, 0.0);
    EXPECT_GT(r.checkpoint_read_ms, 0.0);
    EXPECT_GE(r.checkpoint_write_peak_rss_growth_mib, 0.0);
    EXPECT_GE(r.checkpoint_read_peak_rss_growth_mib, 0.0);
  }
  const double ratio = rows[1].checkpoint_mib / rows[0].checkpoint_mib;
  EXPECT_GT(ratio, 30.0);
  EXPECT_LE(ratio, 40.0);
  // Evaluation per node, at one thread: one worker, so one measurement serves both columns.
  for (const auto& r : rows) {
    EXPECT_EQ(r.eval_workers, 1);
    EXPECT_GT(r.eval_ms_per_node_in_turn, 0.0);
    EXPECT_DOUBLE_EQ(r.eval_ms_per_node, r.eval_ms_per_node_in_turn);
  }
}

// At two threads evaluation also runs on two workers, timed apart from the passes in turn.
TEST(ScalingBench, EvaluationIsTimedInTurnAndOnWorkers) {
  ScalingBenchOptions o = tiny();
  o.nodes = {3};
  o.threads = 2;
  const auto rows = run_scaling_bench(o, [](const std::string&) {});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].eval_workers, 2);
  EXPECT_GT(rows[0].eval_ms_per_node_in_turn, 0.0);
  EXPECT_GT(rows[0].eval_ms_per_node, 0.0);
}

// The first steps touch the step's memory for the first time; their faults are counted apart
// from the timed steps', and without warm-up steps there are none to count.
TEST(ScalingBench, WarmUpFaultsAreCountedApart) {
  ScalingBenchOptions o = tiny();
  o.nodes = {40};
  o.warmup_steps = 0;
  const auto cold = run_scaling_bench(o, [](const std::string&) {});
  ASSERT_EQ(cold.size(), 1u);
  EXPECT_EQ(cold[0].warmup_page_faults_per_step, 0.0);
  o.warmup_steps = 2;
  std::vector<std::string> lines;
  const auto warm = run_scaling_bench(o, [&](const std::string& l) { lines.push_back(l); });
  ASSERT_EQ(warm.size(), 1u);
  EXPECT_GE(warm[0].warmup_page_faults_per_step, 0.0);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[1].find("warm-up faults/step"), std::string::npos) << lines[1];
}

TEST(ScalingBench, BadOptionsAreConfigErrors) {
  ScalingBenchOptions o = tiny();
  o.nodes = {8, 0};
  EXPECT_THROW(run_scaling_bench(o, [](const std::string&) {}), ConfigError);
  o = tiny();
  o.steps = 0;
  EXPECT_THROW(run_scaling_bench(o, [](const std::string&) {}), ConfigError);
}

}  // namespace
}  // namespace lpdt::exp
