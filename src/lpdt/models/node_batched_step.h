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
// PassObserver (null: none; only with pass_workers = 1, since passes side by side share the heap).
// pass_workers: 1 runs the passes in turn on the calling thread with its intra-op threads; more
// runs that many passes side by side on worker threads of one intra-op thread each
// (core/pass_workers.h), CPU tensors only. The result does not depend on it beyond the last bits
// of float sums (oneDNN splits a convolution's sums by thread count; tested).
GradientResult compute_gradients(const Model& model, const at::Tensor& x,
                                 std::vector<at::Tensor>& buffers, const at::Tensor& inputs,
                                 const at::Tensor& targets, std::int64_t nodes_per_pass,
                                 nn::ConvAlgorithm conv_algorithm,
                                 const quant::DrawKey& draws = {},
                                 const PassObserver* observer = nullptr, int pass_workers = 1);

// One node's forward pass on `inputs` ([1, b, ...], as the model takes them), traced
// (nn/tracing_layer.h): the layers it ran with their shapes. Without gradients, on fresh buffers,
// and with the global generator's state put back (dropout draws from it): nothing of a run's
// state changes.
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

// The worker threads of run.pass_workers = 0 (automatic): on the CPU, one per intra-op thread,
// at most one per pass; 1 (passes in turn) on a GPU, for a single pass, and for a model that
// draws from LibTorch's global generator (Model::draws_from_global_generator). Measured on a
// 2-core AVX-512 CPU, ResNet-20 at 8 nodes, steps alternating in one process: 2 workers of one
// thread 1.14-1.20x faster than passes in turn on 2 threads, float32 and the integer backend
// alike (docs/benchmarks.md, training throughput item 12).
int automatic_pass_workers(const Model& model, std::int64_t passes, bool on_gpu,
                           int intra_op_threads);
// run.pass_workers as given (0 = automatic) -> the count compute_gradients takes, at most one per
// pass. ConfigError for more than one worker on a GPU or for a model that draws from the global
// generator.
int resolve_pass_workers(int requested, const Model& model, std::int64_t passes, bool on_gpu,
                         int intra_op_threads);
// The workers of evaluation (exp::node_accuracies) for run.pass_workers as given: 1 on a GPU, for
// 1 (passes in turn) and for a model whose training runs its passes in turn (one with dropout,
// Model::draws_from_global_generator: the transformers, VGG-11); else the count given, or for 0
// (automatic) one per intra-op thread. Only the models whose training passes run side by side are
// evaluated so: a transformer's forward passes on two threads at once corrupted the heap in
// LibTorch 1.13 (glibc's "malloc_consolidate(): unaligned fastbin chunk detected" at exit, 6 of
// 30 runs of TextTraining.AVocabularyThatCannotSpellTheTextIsAWarning).
int evaluation_workers(int requested, const Model& model, bool on_gpu, int intra_op_threads);

}  // namespace lpdt::models
