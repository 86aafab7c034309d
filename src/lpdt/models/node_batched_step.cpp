#include "lpdt/models/node_batched_step.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <mutex>
#include <cmath>
#include <string>

#include "lpdt/core/error.h"
#include "lpdt/core/pass_workers.h"

namespace lpdt::models {

GradientResult compute_gradients(const Model& model, const at::Tensor& x,
                                 std::vector<at::Tensor>& buffers, const at::Tensor& inputs,
                                 const at::Tensor& targets, std::int64_t nodes_per_pass,
                                 nn::ConvAlgorithm conv_algorithm, const quant::DrawKey& draws,
                                 const PassObserver* observer, int pass_workers) {
  LPDT_CHECK(pass_workers >= 1, "compute_gradients: pass_workers must be >= 1, got " +
                                    std::to_string(pass_workers));
  LPDT_CHECK(pass_workers == 1 || (observer == nullptr && x.device().is_cpu()),
             "compute_gradients: passes on worker threads are for CPU tensors and no observer");
  const std::int64_t k = x.size(0);
  const std::int64_t pass = nodes_per_pass <= 0 ? k : std::min(nodes_per_pass, k);
  const std::int64_t passes = (k + pass - 1) / pass;
  GradientResult result;
  result.grad = at::empty_like(x);
  result.loss = at::empty({k}, x.options());
  // Pass i: nodes [i * pass, i * pass + count). Passes touch disjoint rows of x's gradient, of the
  // buffers and of the result, so they may run in any order or side by side.
  const auto run_pass = [&](std::int64_t i) {
    const std::int64_t start = i * pass;
    const std::int64_t count = std::min(pass, k - start);
    // A leaf per pass: its gradient is written straight into the rows of the result.
    at::Tensor xs = x.narrow(0, start, count).detach().requires_grad_(true);
    std::vector<at::Tensor> pass_buffers;  // row slices: views, so BatchNorm updates land in place
    pass_buffers.reserve(buffers.size());
    for (const auto& b : buffers) pass_buffers.push_back(b.narrow(0, start, count));
    nn::Context ctx{&model.layout(), xs, &pass_buffers, count, /*training=*/true, conv_algorithm};
    ctx.draws = draws;
    ctx.draws.first_node = draws.first_node + start;
    if (observer != nullptr && observer->before_forward) observer->before_forward(count);
    const at::Tensor logits = model.forward(ctx, inputs.narrow(0, start, count));
    const auto b = logits.size(1);
    // Each node's mean cross-entropy; their sum's gradient in row i is node i's own gradient.
    const at::Tensor node_losses =
        at::cross_entropy_loss(logits.reshape({count * b, -1}),
                               targets.narrow(0, start, count).reshape(-1), {}, at::Reduction::None)
            .view({count, b})
            .mean(1);
    if (observer != nullptr && observer->after_forward) observer->after_forward(count);
    node_losses.sum().backward();
    result.grad.narrow(0, start, count).copy_(xs.grad());
    result.loss.narrow(0, start, count).copy_(node_losses.detach());
  };
  if (pass_workers > 1 && passes > 1) {
    lpdt::pass_workers(pass_workers).run(passes, run_pass);
  } else {
    for (std::int64_t i = 0; i < passes; ++i) run_pass(i);
  }
  return result;
}

std::vector<TracedLayer> trace_forward(const Model& model, const at::Tensor& inputs) {
  torch::NoGradGuard no_grad;
  // A training forward of a model with dropout draws from the device's global generator: the
  // trace puts its state back, or a run resumed from a checkpoint (which restores that state and
  // then traces to size its passes) would draw other masks than the uninterrupted run.
  at::Generator generator = at::globalContext().defaultGenerator(inputs.device());
  at::Tensor generator_state;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator_state = generator.get_state();
  }
  LayerTrace trace;
  std::vector<at::Tensor> buffers = model.init_buffers(1);
  for (at::Tensor& b : buffers) b = b.to(inputs.device());
  nn::Context ctx{&model.layout(), model.init_params(0).unsqueeze(0).to(inputs.device()),
                  &buffers, 1, /*training=*/true};
  ctx.trace = &trace;
  model.forward(ctx, inputs);
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(generator_state);
  }
  return trace.layers;
}

double saved_activation_bytes(const std::vector<TracedLayer>& trace) {
  double bytes = 0;
  for (const TracedLayer& layer : trace) {
    bytes += static_cast<double>(layer.batch) * static_cast<double>(layer.saved_per_sample) * 4.0;
  }
  return bytes;
}

std::int64_t automatic_nodes_per_pass(std::int64_t k, bool on_gpu,
                                      double saved_bytes_per_node) {
  if (on_gpu) return k;
  const double fit = saved_bytes_per_node > 0
                         ? std::floor(kCpuPassActivationBudget / saved_bytes_per_node)
                         : static_cast<double>(kCpuNodesPerPass);
  const auto pass = static_cast<std::int64_t>(
      std::clamp(fit, 1.0, static_cast<double>(kCpuNodesPerPass)));
  return std::min(k, pass);
}

std::int64_t automatic_nodes_per_pass(const Model& model, const at::Tensor& one_node_inputs,
                                      std::int64_t k, bool on_gpu) {
  if (on_gpu) return k;
  return automatic_nodes_per_pass(
      k, on_gpu, saved_activation_bytes(trace_forward(model, one_node_inputs)));
}

int automatic_pass_workers(const Model& model, std::int64_t passes, bool on_gpu,
                           int intra_op_threads) {
  if (on_gpu || passes <= 1 || model.draws_from_global_generator()) return 1;
  return static_cast<int>(std::clamp<std::int64_t>(intra_op_threads, 1, passes));
}

int evaluation_workers(int requested, const Model& model, bool on_gpu, int intra_op_threads) {
  if (on_gpu || requested == 1 || model.draws_from_global_generator()) return 1;
  return requested > 1 ? requested : std::max(intra_op_threads, 1);
}

int resolve_pass_workers(int requested, const Model& model, std::int64_t passes, bool on_gpu,
                         int intra_op_threads) {
  if (requested <= 0) return automatic_pass_workers(model, passes, on_gpu, intra_op_threads);
  if (requested == 1) return 1;
  const std::string value = "run.pass_workers = " + std::to_string(requested);
  if (on_gpu) {
    throw ConfigError(value + ": worker threads run passes on the CPU; a GPU run takes its "
                              "nodes in one pass. Set 0 (automatic) or 1.");
  }
  if (model.draws_from_global_generator()) {
    throw ConfigError(value + ": model '" + model.name() +
                      "' uses dropout, drawn from LibTorch's global generator, which passes side "
                      "by side would draw in an order that varies from run to run. Set 0 "
                      "(automatic) or 1.");
  }
  return static_cast<int>(std::min<std::int64_t>(requested, std::max<std::int64_t>(passes, 1)));
}

}  // namespace lpdt::models
