#pragma once
// Per-node evaluation that outweighs the training: every evaluated epoch runs each node's model
// over the whole test split, while each node trains on its own share of the training split only.
// At many nodes a node's share is a few batches, and the evaluation becomes most of the run (a
// 1,024-node LeNet-5 epoch on Fashion-MNIST: 2 s of training, 128 s of evaluation on a 2-core
// CPU). A run says so when it starts and keeps it in summary.json ("warnings"), with the keys
// that cut it; the results are right either way.
#include <cstdint>
#include <optional>
#include <string>

#include "lpdt/exp/experiment_config.h"

namespace lpdt::exp {

// A forward pass costs about a third of a training step's forward and backward passes.
inline constexpr double kForwardShareOfTrainingStep = 1.0 / 3.0;
// Warn when the per-node evaluation of an evaluated epoch is estimated at more than this many
// times the epoch's training.
inline constexpr double kEvaluationCostWarningRatio = 3.0;

// The estimated ratio of one per-node evaluation (every node's model over `test_samples`
// samples, forward only) to the training between two evaluations (run.eval_every epochs of
// `steps_per_epoch` steps of data.batch_size per node, forward and backward). 0 without
// per-node evaluation.
double per_node_evaluation_cost_ratio(const ExperimentConfig& config, std::int64_t test_samples,
                                      std::int64_t steps_per_epoch);

// The warning, with the figures and what to set instead, when that ratio is above
// kEvaluationCostWarningRatio; nothing otherwise.
std::optional<std::string> evaluation_cost_warning(const ExperimentConfig& config,
                                                   std::int64_t test_samples,
                                                   std::int64_t steps_per_epoch);

}  // namespace lpdt::exp
