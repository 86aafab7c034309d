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
  const StepTraits capturable;
  if (!cuda_graphs_available()) {
    EXPECT_NE(cuda_graph_obstacle(capturable).find("no CUDA graphs"), std::string::npos);
    return;
  }
  EXPECT_EQ(cuda_graph_obstacle(capturable), "");
  StepTraits t = capturable;
  t.int8_model = true;
  EXPECT_NE(cuda_graph_obstacle(t).find("stochastic-rounding"), std::string::npos);
  t.draws_on_device = true;  // the CUDA quantizer kernels read the step from the device
  EXPECT_EQ(cuda_graph_obstacle(t), "");
  t = capturable;
  t.static_topology = false;
  EXPECT_NE(cuda_graph_obstacle(t).find("time-varying"), std::string::npos);
  t = capturable;
  t.random_compressor = true;
  EXPECT_NE(cuda_graph_obstacle(t).find("random-k"), std::string::npos);
  t = capturable;
  t.lr_changes_every_step = true;
  EXPECT_NE(cuda_graph_obstacle(t).find("cosine"), std::string::npos);
  t = capturable;
  t.faults = true;
  EXPECT_NE(cuda_graph_obstacle(t).find("injected faults"), std::string::npos);
  t = capturable;
  t.dead_nodes = true;  // a resumed run's nodes dead at its checkpoint, no fault injected
  EXPECT_NE(cuda_graph_obstacle(t).find("dead at the checkpoint"), std::string::npos);
  t = capturable;
  t.adam = true;
  EXPECT_NE(cuda_graph_obstacle(t).find("Adam"), std::string::npos);
}

}  // namespace
}  // namespace lpdt::exp
