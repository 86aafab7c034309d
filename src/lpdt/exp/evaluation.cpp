#include "lpdt/exp/evaluation.h"

#include <torch/torch.h>

#include <algorithm>
#include <numeric>

#include "lpdt/algo/consensus.h"

namespace lpdt::exp {

std::vector<double> node_accuracies(const models::Model& model, const at::Tensor& params,
                                    const std::vector<at::Tensor>& buffers,
                                    const data::EvalBatches& batches) {
  torch::NoGradGuard no_grad;
  const std::int64_t k = params.size(0);
  // Evaluation must not move BatchNorm running statistics: work on copies.
  std::vector<at::Tensor> eval_buffers;
  for (const auto& b : buffers) eval_buffers.push_back(b.clone());
  at::Tensor correct = at::zeros({k}, at::kLong);
  std::int64_t total = 0;
  for (const data::EvalBatch& batch : batches) {
    const auto& in = batch.inputs;  // [B, C, H, W]
    // One node per pass keeps the activations in cache on the CPU (docs/benchmarks.md).
    for (std::int64_t i = 0; i < k; ++i) {
      std::vector<at::Tensor> node_buffers;
      for (const auto& b : eval_buffers) node_buffers.push_back(b.narrow(0, i, 1));
      nn::Context ctx{&model.layout(), params.narrow(0, i, 1), &node_buffers, 1,
                      /*training=*/false};
      const at::Tensor predictions = model.forward(ctx, in.unsqueeze(0)).argmax(2);  // [1, B]
      correct[i] += predictions.eq(batch.targets.unsqueeze(0)).sum().item<std::int64_t>();
    }
    total += in.size(0);
  }
  std::vector<double> accuracy(k);
  for (std::int64_t i = 0; i < k; ++i) {
    accuracy[i] = 100.0 * static_cast<double>(correct[i].item<std::int64_t>()) /
                  static_cast<double>(std::max<std::int64_t>(total, 1));
  }
  return accuracy;
}

std::pair<at::Tensor, std::vector<at::Tensor>> average_model(
    const at::Tensor& params, const std::vector<at::Tensor>& buffers) {
  std::vector<at::Tensor> mean_buffers;
  for (const auto& b : buffers) mean_buffers.push_back(b.mean(0, /*keepdim=*/true));
  return {params.mean(0, /*keepdim=*/true), mean_buffers};
}

Evaluation evaluate(const models::Model& model, const at::Tensor& params,
                    const std::vector<at::Tensor>& buffers, const data::EvalBatches& batches,
                    bool per_node) {
  torch::NoGradGuard no_grad;
  Evaluation result;
  const at::Tensor detached = params.detach();
  if (per_node) {
    result.node_accuracy = node_accuracies(model, detached, buffers, batches);
    const auto& acc = result.node_accuracy;
    result.mean_accuracy = std::accumulate(acc.begin(), acc.end(), 0.0) / acc.size();
    result.min_accuracy = *std::min_element(acc.begin(), acc.end());
    result.max_accuracy = *std::max_element(acc.begin(), acc.end());
  }
  auto [mean_params, mean_buffers] = average_model(detached, buffers);
  result.average_model_accuracy = node_accuracies(model, mean_params, mean_buffers, batches)[0];
  result.consensus_distance = algo::consensus_distance(detached);
  return result;
}

}  // namespace lpdt::exp
