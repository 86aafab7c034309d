#include "lpdt/models/node_batched_step.h"

#include <torch/torch.h>

#include <algorithm>

namespace lpdt::models {

GradientResult compute_gradients(const Model& model, const at::Tensor& x,
                                 std::vector<at::Tensor>& buffers, const at::Tensor& inputs,
                                 const at::Tensor& targets, std::int64_t nodes_per_pass,
                                 nn::ConvAlgorithm conv_algorithm, const quant::DrawKey& draws) {
  const std::int64_t k = x.size(0);
  const std::int64_t pass = nodes_per_pass <= 0 ? k : std::min(nodes_per_pass, k);
  GradientResult result;
  result.grad = at::empty_like(x);
  result.loss = at::empty({k}, x.options());
  for (std::int64_t start = 0; start < k; start += pass) {
    const std::int64_t count = std::min(pass, k - start);
    // A leaf per pass: its gradient is written straight into the rows of the result.
    at::Tensor xs = x.narrow(0, start, count).detach().requires_grad_(true);
    std::vector<at::Tensor> pass_buffers;  // row slices: views, so BatchNorm updates land in place
    pass_buffers.reserve(buffers.size());
    for (const auto& b : buffers) pass_buffers.push_back(b.narrow(0, start, count));
    nn::Context ctx{&model.layout(), xs, &pass_buffers, count, /*training=*/true, conv_algorithm};
    ctx.draws = draws;
    ctx.draws.first_node = draws.first_node + start;
    const at::Tensor logits = model.forward(ctx, inputs.narrow(0, start, count));
    const auto b = logits.size(1);
    // Each node's mean cross-entropy; their sum's gradient in row i is node i's own gradient.
    const at::Tensor node_losses =
        at::cross_entropy_loss(logits.reshape({count * b, -1}),
                               targets.narrow(0, start, count).reshape(-1), {}, at::Reduction::None)
            .view({count, b})
            .mean(1);
    node_losses.sum().backward();
    result.grad.narrow(0, start, count).copy_(xs.grad());
    result.loss.narrow(0, start, count).copy_(node_losses.detach());
  }
  return result;
}

std::int64_t automatic_nodes_per_pass(std::int64_t k, bool on_gpu) {
  return on_gpu ? k : std::min(k, kCpuNodesPerPass);
}

}  // namespace lpdt::models
