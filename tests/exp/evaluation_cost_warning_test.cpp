// The per-node evaluation cost warning (exp/evaluation_cost_warning.h) against its arithmetic:
// a node's test forward passes, a third of a training step each, over the batches it trains
// between two evaluations.
#include "lpdt/exp/evaluation_cost_warning.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lpdt::exp {
namespace {

using ::testing::HasSubstr;

ExperimentConfig nodes_and_batch(int nodes, int batch_size) {
  ExperimentConfig config;
  config.graph.nodes = nodes;
  config.data.batch_size = batch_size;
  return config;
}

TEST(EvaluationCostWarning, RatioIsTestForwardPassesOverTrainingBetweenEvaluations) {
  ExperimentConfig config = nodes_and_batch(1024, 32);
  // 10,000 test samples / 3 against 1 batch of 32: 104.2.
  EXPECT_NEAR(per_node_evaluation_cost_ratio(config, 10000, 1), 10000.0 / 3.0 / 32.0, 1e-9);
  config.run.eval_every = 4;  // four epochs of training between two evaluations
  EXPECT_NEAR(per_node_evaluation_cost_ratio(config, 10000, 1), 10000.0 / 3.0 / 128.0, 1e-9);
  config.eval.per_node = false;
  EXPECT_EQ(per_node_evaluation_cost_ratio(config, 10000, 1), 0.0);
  EXPECT_EQ(per_node_evaluation_cost_ratio(nodes_and_batch(8, 32), 10000, 0), 0.0)
      << "no training step: no ratio, not a division by zero";
}

TEST(EvaluationCostWarning, SaysTheFiguresAndTheKeysWhenEvaluationDominates) {
  // Fashion-MNIST over 1,024 nodes: 58 training samples a node, one batch of 32 an epoch.
  const auto warning = evaluation_cost_warning(nodes_and_batch(1024, 32), 10000, 1);
  ASSERT_TRUE(warning.has_value());
  EXPECT_THAT(*warning, HasSubstr("each of the 1024 nodes' models over the 10000 test samples "
                                  "every epoch, while each node trains on 1 batch of 32"));
  EXPECT_THAT(*warning, HasSubstr("about 104 times"));
  EXPECT_THAT(*warning, HasSubstr("eval.per_node = false"));
  EXPECT_THAT(*warning, HasSubstr("data.test_subset"));
  EXPECT_THAT(*warning, HasSubstr("run.eval_every"));
  // 8 nodes: 234 batches a node an epoch, the evaluation under half the training.
  EXPECT_FALSE(evaluation_cost_warning(nodes_and_batch(8, 32), 10000, 234).has_value());
  // At the threshold, not above it: no warning; just above: one.
  const ExperimentConfig one_batch = nodes_and_batch(64, 10);
  EXPECT_FALSE(evaluation_cost_warning(one_batch, 90, 1).has_value());  // ratio 3
  EXPECT_TRUE(evaluation_cost_warning(one_batch, 91, 1).has_value());
  ExperimentConfig rarely = nodes_and_batch(1024, 32);
  rarely.run.eval_every = 50;  // 104 / 50 = 2.1
  EXPECT_FALSE(evaluation_cost_warning(rarely, 10000, 1).has_value());
  rarely.run.eval_every = 10;  // 10.4
  const auto every_ten = evaluation_cost_warning(rarely, 10000, 1);
  ASSERT_TRUE(every_ten.has_value());
  EXPECT_THAT(*every_ten, HasSubstr("test samples every 10 epochs, while"));
  EXPECT_THAT(*every_ten, HasSubstr("about 10 times"));
}

}  // namespace
}  // namespace lpdt::exp
