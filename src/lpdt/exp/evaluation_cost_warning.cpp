#include "lpdt/exp/evaluation_cost_warning.h"

#include <algorithm>
#include <cstdio>

namespace lpdt::exp {

double per_node_evaluation_cost_ratio(const ExperimentConfig& config, std::int64_t test_samples,
                                      std::int64_t steps_per_epoch) {
  if (!config.eval.per_node || test_samples <= 0) return 0.0;
  // Per node, so the node count cancels: each node's model sees the whole test split, and each
  // node trains steps_per_epoch batches an epoch, run.eval_every epochs between evaluations.
  const double trained = static_cast<double>(steps_per_epoch) *
                         static_cast<double>(config.data.batch_size) *
                         static_cast<double>(std::max(1, config.run.eval_every));
  if (trained <= 0) return 0.0;
  return static_cast<double>(test_samples) * kForwardShareOfTrainingStep / trained;
}

std::optional<std::string> evaluation_cost_warning(const ExperimentConfig& config,
                                                   std::int64_t test_samples,
                                                   std::int64_t steps_per_epoch) {
  const double ratio = per_node_evaluation_cost_ratio(config, test_samples, steps_per_epoch);
  if (ratio <= kEvaluationCostWarningRatio) return std::nullopt;
  const std::string every = config.run.eval_every > 1
                                ? "every " + std::to_string(config.run.eval_every) + " epochs"
                                : std::string("every epoch");
  char text[640];
  std::snprintf(text, sizeof text,
                "eval.per_node = true runs each of the %d nodes' models over the %lld test "
                "samples %s, while each node trains on %lld batch%s of %d an epoch: each "
                "evaluation is about %.0f times the work of the training between two. Set "
                "eval.per_node = false (the averaged model only), data.test_subset = N (the "
                "first N test samples), or a larger run.eval_every",
                config.graph.nodes, static_cast<long long>(test_samples), every.c_str(),
                static_cast<long long>(steps_per_epoch), steps_per_epoch == 1 ? "" : "es",
                config.data.batch_size, ratio);
  return std::string(text);
}

}  // namespace lpdt::exp
