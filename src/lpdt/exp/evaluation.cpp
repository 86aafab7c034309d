#include "lpdt/exp/evaluation.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <limits>
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
  const at::Device device = params.device();
  at::Tensor correct = at::zeros({k}, at::TensorOptions().dtype(at::kLong).device(device));
  std::int64_t total = 0;
  // One node per pass keeps the activations in cache on the CPU; a GPU takes all nodes in one
  // pass of grouped kernels (docs/benchmarks.md).
  const std::int64_t pass = device.is_cpu() ? 1 : k;
  const nn::ConvAlgorithm conv =
      device.is_cpu() ? nn::ConvAlgorithm::kPerNode : nn::ConvAlgorithm::kGrouped;
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
      std::vector<std::int64_t> node_shape = in.sizes().vec();
      node_shape.insert(node_shape.begin(), count);
      const at::Tensor node_inputs = in.unsqueeze(0).expand(node_shape);  // [count, B, ...]
      const at::Tensor predictions = model.forward(ctx, node_inputs).argmax(2);  // [count, B]
      correct.narrow(0, start, count) += predictions.eq(targets.unsqueeze(0)).sum(1);
    }
    total += in.size(0);
  }
  const at::Tensor correct_host = correct.cpu();
  std::vector<double> accuracy(k);
  for (std::int64_t i = 0; i < k; ++i) {
    accuracy[i] = 100.0 * static_cast<double>(correct_host[i].item<std::int64_t>()) /
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
  } else {
    result.mean_accuracy = result.min_accuracy = result.max_accuracy =
        std::numeric_limits<double>::quiet_NaN();
  }
  auto [mean_params, mean_buffers] = average_model(detached, buffers);
  result.average_model_accuracy = node_accuracies(model, mean_params, mean_buffers, batches)[0];
  result.consensus_distance = algo::consensus_distance(detached);
  return result;
}

}  // namespace lpdt::exp
