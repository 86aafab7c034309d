// `lpdt bench --precision`: the modes' steps alternate (so that a machine's changing load slows
// them alike), the ratios to fp32 hold wherever fp32 stands in --modes, and --profile adds an
// operator table per mode.
#include "lpdt/exp/precision_bench.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "lpdt/core/pass_workers.h"

namespace lpdt::exp {
namespace {

PrecisionBenchOptions tiny_lenet() {
  PrecisionBenchOptions o;
  o.arch = "lenet5";
  o.nodes = {2};
  o.batch_size = 4;
  o.steps = 3;
  o.warmup_steps = 1;
  o.threads = 1;
  o.size = 28;
  return o;
}

TEST(PrecisionBench, ModesAndWorkerCountsAlternateStepByStep) {
  PrecisionBenchOptions o = tiny_lenet();
  o.modes = {"int8-simulated", "fp32"};
  o.pass_workers = {1, 2};
  o.nodes_per_pass = 1;  // two passes, so that 2 workers stay 2
  std::vector<std::tuple<std::string, std::int64_t, int>> order;
  std::map<std::string, std::set<const PassWorkers*>> pools;  // the pool each mode's steps get
  o.before_step = [&](const std::string& mode, std::int64_t step, int workers) {
    order.emplace_back(mode, step, workers);
    pools[mode].insert(&pass_workers(2));
  };
  const auto rows = run_precision_bench(o, [](const std::string&) {});
  // warm-up 1 + 3 timed steps per worker count (2) = 7 rounds, each mode once a round
  ASSERT_EQ(order.size(), 2u * 7u);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& [mode, step, workers] = order[i];
    EXPECT_EQ(mode, o.modes[i % 2]) << i;
    EXPECT_EQ(step, static_cast<std::int64_t>(i / 2)) << i;
    EXPECT_EQ(workers, step % 2 == 0 ? 1 : 2) << i;
  }
  // Each mode's passes run on workers of its own (shared workers slowed fp32 between int8 steps).
  ASSERT_EQ(pools["fp32"].size(), 1u);
  ASSERT_EQ(pools["int8-simulated"].size(), 1u);
  EXPECT_NE(*pools["fp32"].begin(), *pools["int8-simulated"].begin());
  // A row per (mode, worker count), in --modes order.
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].mode, "int8-simulated");
  EXPECT_EQ(rows[0].pass_workers, 1);
  EXPECT_EQ(rows[1].pass_workers, 2);
  EXPECT_EQ(rows[2].mode, "fp32");
}

TEST(PrecisionBench, RatiosToFp32WhereverItStandsInTheModes) {
  PrecisionBenchOptions o = tiny_lenet();
  o.modes = {"int8-simulated", "fp32"};  // fp32 last
  const auto rows = run_precision_bench(o, [](const std::string&) {});
  ASSERT_EQ(rows.size(), 2u);
  const PrecisionResult& int8 = rows[0];
  const PrecisionResult& fp32 = rows[1];
  ASSERT_EQ(fp32.mode, "fp32");
  EXPECT_DOUBLE_EQ(fp32.speedup_vs_fp32, 1.0);
  ASSERT_GT(int8.speedup_vs_fp32, 0.0);
  EXPECT_DOUBLE_EQ(int8.speedup_vs_fp32, fp32.step_ms / int8.step_ms);
  EXPECT_DOUBLE_EQ(int8.activation_ratio_vs_fp32, fp32.activation_mib / int8.activation_mib);
  // Round by round: fp32's step over the mode's step of the same round.
  ASSERT_EQ(int8.step_ms_samples.size(), 3u);
  ASSERT_EQ(fp32.step_ms_samples.size(), 3u);
  EXPECT_DOUBLE_EQ(median(fp32.step_ms_samples), fp32.step_ms);
  std::vector<double> ratios;
  for (std::size_t round = 0; round < 3; ++round) {
    ratios.push_back(fp32.step_ms_samples[round] / int8.step_ms_samples[round]);
  }
  std::sort(ratios.begin(), ratios.end());
  EXPECT_DOUBLE_EQ(int8.round_speedup_vs_fp32.low, 0.5 * (ratios[0] + ratios[1]));
  EXPECT_DOUBLE_EQ(int8.round_speedup_vs_fp32.median, ratios[1]);
  EXPECT_DOUBLE_EQ(int8.round_speedup_vs_fp32.high, 0.5 * (ratios[1] + ratios[2]));
  EXPECT_DOUBLE_EQ(fp32.round_speedup_vs_fp32.median, 1.0);
  // Without fp32 in --modes there is nothing to compare with: 0 (printed "-").
  o.modes = {"int8-simulated"};
  const PrecisionResult alone = run_precision_bench(o, [](const std::string&) {}).at(0);
  EXPECT_EQ(alone.speedup_vs_fp32, 0.0);
  EXPECT_EQ(alone.round_speedup_vs_fp32.median, 0.0);
}

// The operator profile (operator_profile.h) of each mode, after its row.
TEST(PrecisionBench, ProfilesEachMode) {
  PrecisionBenchOptions o = tiny_lenet();
  o.steps = 2;
  o.modes = {"fp32", "int8-simulated"};
  o.profile_rows = 5;
  o.json_path = ::testing::TempDir() + "precision_bench_profile.json";
  std::vector<std::string> lines;
  const auto rows = run_precision_bench(o, [&](const std::string& l) { lines.push_back(l); });
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& r : rows) {
    ASSERT_FALSE(r.profile.operators.empty()) << r.mode;
    // LeNet-5 has two convolutions; its 2 nodes run in one pass per step with one grouped
    // convolution per layer, as the trainer runs them.
    const auto& ops = r.profile.operators;
    const auto conv = std::find_if(ops.begin(), ops.end(), [](const OperatorTime& op) {
      return op.name == "aten::convolution";
    });
    ASSERT_NE(conv, ops.end()) << r.mode;
    EXPECT_DOUBLE_EQ(conv->calls_per_step, 2.0) << r.mode;
    EXPECT_GT(r.profile.wall_ms_per_step, 0.0);
  }
  // title, peak, header, and per mode its row, the note that the profiled steps run their
  // passes in turn, and 5 + 4 profile lines
  EXPECT_EQ(lines.size(), 3u + 2u * (1u + 1u + 9u));
  EXPECT_NE(lines[1].find("GFLOP/s"), std::string::npos);
  EXPECT_NE(lines[4].find("passes in turn"), std::string::npos) << lines[4];
  // The JSON holds each mode's profile with the threads it observed (one: passes in turn).
  std::ifstream file(o.json_path);
  const nlohmann::json j = nlohmann::json::parse(file);
  ASSERT_EQ(j["rows"].size(), 2u);
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(row["profile"]["threads"].get<int>(), 1) << row["mode"];
    EXPECT_GT(row["profile"]["thread_ms_per_step"].get<double>(), 0.0) << row["mode"];
    EXPECT_FALSE(row["profile"]["operators"].empty()) << row["mode"];
  }
  EXPECT_EQ(j["step_order"], "modes and worker counts alternating step by step");
  // Every timed step, and the round-by-round ratios' quartiles.
  for (std::size_t i = 0; i < 2; ++i) {
    const nlohmann::json& row = j["rows"][i];
    EXPECT_EQ(row["step_ms_samples"].get<std::vector<double>>(), rows[i].step_ms_samples);
    EXPECT_DOUBLE_EQ(row["round_speedup_vs_fp32"]["median"].get<double>(),
                     rows[i].round_speedup_vs_fp32.median);
    EXPECT_DOUBLE_EQ(row["round_speedup_vs_fp32"]["q1"].get<double>(),
                     rows[i].round_speedup_vs_fp32.low);
    EXPECT_DOUBLE_EQ(row["round_speedup_vs_fp32"]["q3"].get<double>(),
                     rows[i].round_speedup_vs_fp32.high);
  }
  // The table's last column: the int8 row's median and quartiles.
  const Quartiles& q = rows[1].round_speedup_vs_fp32;
  char expected[48];
  std::snprintf(expected, sizeof expected, "%.2fx [%.2f-%.2f]", q.median, q.low, q.high);
  EXPECT_NE(lines[2 + 1 + 11].find(expected), std::string::npos) << lines[2 + 1 + 11];
}

}  // namespace
}  // namespace lpdt::exp
