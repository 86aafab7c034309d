// The trainer's CUDA-graph policy, as far as a machine without a GPU can check it: when graphs
// are off every step runs eagerly; why a step cannot be captured is named; and asking for a
// capture without CUDA graphs is a clear error, not a silent eager run.
#include "lpdt/exp/graphed_steps.h"

#include <gtest/gtest.h>

#include "lpdt/core/error.h"

namespace lpdt::exp {
namespace {

TEST(GraphedSteps, DisabledRunsEveryStepEagerly) {
  GraphedSteps steps(/*enabled=*/false);
  int runs = 0;
  for (int i = 0; i < 2 * GraphedSteps::kEagerSteps; ++i) {
    EXPECT_EQ(steps.run(0.1, [&] { ++runs; }), GraphedSteps::Run::kEager);
  }
  EXPECT_EQ(runs, 2 * GraphedSteps::kEagerSteps);
  EXPECT_EQ(steps.graphs(), 0u);
}

TEST(GraphedSteps, WarmsUpEagerlyBeforeCapturing) {
  if (cuda_graphs_available()) GTEST_SKIP() << "checked on the GPU by the models tests";
  GraphedSteps steps(/*enabled=*/true);
  int runs = 0;
  for (int i = 0; i < GraphedSteps::kEagerSteps; ++i) {
    EXPECT_EQ(steps.run(0.1, [&] { ++runs; }), GraphedSteps::Run::kEager);
  }
  EXPECT_EQ(runs, GraphedSteps::kEagerSteps);
  // The next step would be captured: without CUDA graphs that is an error naming the build.
  try {
    steps.run(0.1, [&] { ++runs; });
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA-enabled LibTorch"), std::string::npos) << e.what();
  }
}

TEST(GraphedSteps, ObstaclesAreNamed) {
  if (!cuda_graphs_available()) {
    EXPECT_NE(cuda_graph_obstacle(false, true, false).find("no CUDA graphs"), std::string::npos);
    return;
  }
  EXPECT_EQ(cuda_graph_obstacle(false, true, false), "");
  EXPECT_NE(cuda_graph_obstacle(true, true, false).find("stochastic-rounding"), std::string::npos);
  EXPECT_NE(cuda_graph_obstacle(false, false, false).find("time-varying"), std::string::npos);
  EXPECT_NE(cuda_graph_obstacle(false, true, true).find("random-k"), std::string::npos);
}

}  // namespace
}  // namespace lpdt::exp
