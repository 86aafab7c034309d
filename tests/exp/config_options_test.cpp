// The library options an experiment configuration maps to (exp/config_options.h).
#include "lpdt/exp/config_options.h"

#include <gtest/gtest.h>

namespace lpdt::exp {
namespace {

TEST(ConfigOptions, LocalOptimizerKeysReachTheDecentralizedOptimizer) {
  ExperimentConfig config;
  const auto sgd = algorithm_options(config, 0);
  EXPECT_EQ(sgd.optimizer(), "sgd");
  config.optim.optimizer = OptimConfig::Optimizer::kAdamW;
  config.optim.beta1 = 0.85;
  config.optim.beta2 = 0.9;
  config.optim.eps = 1e-6;
  config.optim.weight_decay = 1e-4;
  const auto adamw = algorithm_options(config, 0);
  EXPECT_EQ(adamw.optimizer(), "adamw");
  EXPECT_EQ(adamw.beta1(), 0.85);
  EXPECT_EQ(adamw.beta2(), 0.9);
  EXPECT_EQ(adamw.eps(), 1e-6);
  EXPECT_EQ(adamw.weight_decay(), 1e-4);
  config.optim.optimizer = OptimConfig::Optimizer::kAdam;
  EXPECT_EQ(algorithm_options(config, 0).optimizer(), "adam");
}

}  // namespace
}  // namespace lpdt::exp
