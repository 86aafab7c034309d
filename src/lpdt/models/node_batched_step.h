#pragma once
// The gradient computation of one training step over k nodes.
#include <ATen/ATen.h>

#include <functional>
#include <vector>

#include "lpdt/core/layer_trace.h"
#include "lpdt/models/model.h"

namespace lpdt::models {

struct GradientResult {
  at::Tensor grad;  // [k, P] float32: row i is node i's mean-loss gradient
  at::Tensor loss;  // [k] float32: each node's mean loss (detached)
};

// Watches the passes of compute_gradients (benchmarks: `lpdt bench --precision` reads the heap
// there to measure what a pass holds for its backward). Either function may be empty; each is
// called with the pass's node count.
struct PassObserver {
  std::function<void(std::int64_t nodes)> before_forward;
  std::function<void(std::int64_t nodes)> after_forward;  // before the pass's backward
};

// Forward and backward of k nodes, `nodes_per_pass` nodes at a time (0 = all k in one pass).
// One pass over all nodes is the GPU's choice (few, large kernels). On the CPU smaller passes
// win: a pass's activations then stay in cache (docs/benchmarks.md). The result does not depend
// on the pass size (tested).
// x: [k, P] float32 parameters; buffers: each [k, ...], updated in place (BatchNorm);
// inputs: [k, b, C, H, W] float32; targets: [k, b] int64. draws: the stochastic-rounding draws of
// this step (8-bit models), draws.first_node the global id of row 0 of x. observer: see
// PassObserver (null: none).
GradientResult compute_gradients(const Model& model, const at::Tensor& x,
                                 std::vector<at::Tensor>& buffers, const at::Tensor& inputs,
                                 const at::Tensor& targets, std::int64_t nodes_per_pass,
                                 nn::ConvAlgorithm conv_algorithm,
                                 const quant::DrawKey& draws = {},
                                 const PassObserver* observer = nullptr);

// One node's forward pass on `inputs` ([1, b, ...], as the model takes them), traced
// (nn/tracing_layer.h): the layers it ran with their shapes. Without gradients, on fresh buffers:
// nothing of a run's state changes.
std::vector<TracedLayer> trace_forward(const Model& model, const at::Tensor& inputs);

// Bytes one node's pass keeps for its backward pass, counted as float32: the sum over the traced
// layers of b x saved_per_sample x 4.
double saved_activation_bytes(const std::vector<TracedLayer>& trace);

// The pass size of run.nodes_per_pass = 0 (automatic). A GPU takes all k nodes in one pass (few,
// large kernels). The CPU takes as many nodes as keep the activations a pass saves for backward
// (float32 count, saved_activation_bytes) within kCpuPassActivationBudget, at least 1 and at most
// kCpuNodesPerPass. Measured on a 2-core AVX-512 CPU with 32 MiB of L3 (docs/benchmarks.md):
// ResNet-20 (50 MiB per node at 32x32) runs 1.25-1.9x faster one node per pass than 2-8 grouped,
// LeNet-5 (1.4 MiB per node) 1.19x faster 16 per pass than one. The cap bounds what a pass holds
// when there are hundreds of nodes.
inline constexpr double kCpuPassActivationBudget = 32.0 * 1024 * 1024;
inline constexpr std::int64_t kCpuNodesPerPass = 16;
std::int64_t automatic_nodes_per_pass(std::int64_t k, bool on_gpu,
                                      double saved_bytes_per_node);
// The same for `model`, traced on one node's inputs ([1, b, ...]) when on the CPU.
std::int64_t automatic_nodes_per_pass(const Model& model, const at::Tensor& one_node_inputs,
                                      std::int64_t k, bool on_gpu);

}  // namespace lpdt::models
