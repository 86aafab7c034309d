#include "lpdt/exp/evaluation.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "lpdt/algo/consensus.h"
#include "lpdt/core/error.h"
#include "lpdt/core/pass_workers.h"

namespace lpdt::exp {

namespace {

// The number of test samples node `node` of [k, P] `params` classifies correctly in `batch`, as one
// pass of one node on the calling thread. buffers: each [k, ...].
// draws: the key of row 0 and test batch 0 (node_accuracies).
std::int64_t correct_in_batch(const models::Model& model, const at::Tensor& params,
                              const std::vector<at::Tensor>& buffers, std::int64_t node,
                              const data::EvalBatch& batch, std::int64_t batch_index,
                              const quant::DrawKey& draws) {
  std::vector<at::Tensor> node_buffers;
  for (const auto& b : buffers) node_buffers.push_back(b.narrow(0, node, 1));
  nn::Context ctx{&model.layout(),    params.narrow(0, node, 1),     &node_buffers, 1,
                  /*training=*/false, nn::ConvAlgorithm::kPerNode};
  ctx.draws = quant::DrawKey{draws.seed, draws.step + batch_index, draws.first_node + node};
  const at::Tensor predictions = model.forward(ctx, batch.inputs.unsqueeze(0)).argmax(2);  // [1, B]
  return predictions.eq(batch.targets.unsqueeze(0)).sum().item<std::int64_t>();
}

std::vector<double> percentages(const std::vector<std::int64_t>& correct, std::int64_t total) {
  std::vector<double> accuracy(correct.size());
  for (std::size_t i = 0; i < correct.size(); ++i) {
    accuracy[i] = 100.0 * static_cast<double>(correct[i]) /
                  static_cast<double>(std::max<std::int64_t>(total, 1));
  }
  return accuracy;
}

}  // namespace

quant::DrawKey eval_draws(std::uint64_t seed, std::int64_t evaluation, std::int64_t first_node) {
  return quant::DrawKey{seed, (std::int64_t{1} << 62) + (evaluation << 32), first_node};
}

std::vector<double> node_accuracies(const models::Model& model, const at::Tensor& params,
                                    const std::vector<at::Tensor>& buffers,
                                    const data::EvalBatches& batches, int workers,
                                    const quant::DrawKey& draws) {
  torch::NoGradGuard no_grad;
  const std::int64_t k = params.size(0);
  // Evaluation must not move BatchNorm running statistics: work on copies.
  std::vector<at::Tensor> eval_buffers;
  for (const auto& b : buffers) eval_buffers.push_back(b.clone());
  const at::Device device = params.device();
  if (device.is_cpu() && workers > 1) {
    // `workers` batches at a time, made once each on this thread; a task is one node on one of
    // them, node-major so that the workers share a node's weights in cache. Each task counts into
    // its own slot; the slots are summed in a fixed order (integers: any order gives the same).
    std::vector<std::int64_t> correct(k, 0);
    std::int64_t total = 0;
    const std::int64_t batch_count = batches.num_batches();
    for (std::int64_t first = 0; first < batch_count; first += workers) {
      const std::int64_t group = std::min<std::int64_t>(workers, batch_count - first);
      std::vector<data::EvalBatch> made;
      for (std::int64_t b = 0; b < group; ++b) {
        made.push_back(batches.batch(first + b));
        total += made.back().inputs.size(0);
      }
      std::vector<std::int64_t> slots(k * group, 0);
      const PassWorkerPoolScope evaluation_workers(kEvaluationPoolFamily);
      pass_workers(workers).run(k * group, [&](std::int64_t task) {
        const std::int64_t node = task / group, b = task % group;
        slots[task] = correct_in_batch(model, params, eval_buffers, node, made[b], first + b, draws);
      });
      for (std::int64_t task = 0; task < k * group; ++task) correct[task / group] += slots[task];
    }
    return percentages(correct, total);
  }
  at::Tensor correct = at::zeros({k}, at::TensorOptions().dtype(at::kLong).device(device));
  std::int64_t total = 0;
  // One node per pass keeps the activations in cache on the CPU; a GPU takes all nodes in one
  // pass of grouped kernels (docs/benchmarks.md).
  const std::int64_t pass = device.is_cpu() ? 1 : k;
  const nn::ConvAlgorithm conv =
      device.is_cpu() ? nn::ConvAlgorithm::kPerNode : nn::ConvAlgorithm::kGrouped;
  std::int64_t batch_index = 0;
  for (const data::EvalBatch& batch : batches) {
    const at::Tensor in = batch.inputs.to(device);  // [B, C, H, W] float32 or [B, L] int64
    const at::Tensor targets = batch.targets.to(device);
    for (std::int64_t start = 0; start < k; start += pass) {
      const std::int64_t count = std::min(pass, k - start);
      std::vector<at::Tensor> node_buffers;
      for (const auto& b : eval_buffers) node_buffers.push_back(b.narrow(0, start, count));
      nn::Context ctx{&model.layout(),    params.narrow(0, start, count),
                      &node_buffers,      count,
                      /*training=*/false, conv};
      ctx.draws = quant::DrawKey{draws.seed, draws.step + batch_index, draws.first_node + start};
      std::vector<std::int64_t> node_shape = in.sizes().vec();
      node_shape.insert(node_shape.begin(), count);
      const at::Tensor node_inputs = in.unsqueeze(0).expand(node_shape);  // [count, B, ...]
      const at::Tensor predictions = model.forward(ctx, node_inputs).argmax(2);  // [count, B]
      correct.narrow(0, start, count) += predictions.eq(targets.unsqueeze(0)).sum(1);
    }
    total += in.size(0);
    ++batch_index;
  }
  const at::Tensor correct_host = correct.cpu();
  std::vector<std::int64_t> counts(k);
  for (std::int64_t i = 0; i < k; ++i) counts[i] = correct_host[i].item<std::int64_t>();
  return percentages(counts, total);
}

std::pair<at::Tensor, std::vector<at::Tensor>> average_model(
    const at::Tensor& params, const std::vector<at::Tensor>& buffers) {
  std::vector<at::Tensor> mean_buffers;
  for (const auto& b : buffers) mean_buffers.push_back(b.mean(0, /*keepdim=*/true));
  return {params.mean(0, /*keepdim=*/true), mean_buffers};
}

Evaluation evaluation_with_node_accuracies(const models::Model& model, const at::Tensor& params,
                                           const std::vector<at::Tensor>& buffers,
                                           const data::EvalBatches& batches,
                                           std::vector<double> node_accuracy, int workers,
                                           const quant::DrawKey& draws) {
  torch::NoGradGuard no_grad;
  const at::Tensor detached = params.detach();
  LPDT_CHECK(
      node_accuracy.empty() || static_cast<std::int64_t>(node_accuracy.size()) == detached.size(0),
      "evaluation_with_node_accuracies: one accuracy per row of params");
  Evaluation result;
  result.node_accuracy = std::move(node_accuracy);
  if (!result.node_accuracy.empty()) {
    const auto& acc = result.node_accuracy;
    result.mean_accuracy = std::accumulate(acc.begin(), acc.end(), 0.0) / acc.size();
    result.min_accuracy = *std::min_element(acc.begin(), acc.end());
    result.max_accuracy = *std::max_element(acc.begin(), acc.end());
  } else {
    result.mean_accuracy = result.min_accuracy = result.max_accuracy =
        std::numeric_limits<double>::quiet_NaN();
  }
  auto [mean_params, mean_buffers] = average_model(detached, buffers);
  const quant::DrawKey average_draws{draws.seed, draws.step,
                                     draws.first_node + detached.size(0)};
  result.average_model_accuracy =
      node_accuracies(model, mean_params, mean_buffers, batches, workers, average_draws)[0];
  result.consensus_distance = algo::consensus_distance(detached);
  return result;
}

Evaluation evaluate(const models::Model& model, const at::Tensor& params,
                    const std::vector<at::Tensor>& buffers, const data::EvalBatches& batches,
                    bool per_node, int workers, const quant::DrawKey& draws) {
  std::vector<double> node_accuracy;
  if (per_node) {
    node_accuracy = node_accuracies(model, params.detach(), buffers, batches, workers, draws);
  }
  return evaluation_with_node_accuracies(model, params, buffers, batches, std::move(node_accuracy),
                                         workers, draws);
}

}  // namespace lpdt::exp
