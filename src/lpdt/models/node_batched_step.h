#pragma once
// The gradient computation of one training step over k nodes.
#include <ATen/ATen.h>

#include <vector>

#include "lpdt/models/model.h"

namespace lpdt::models {

struct GradientResult {
  at::Tensor grad;  // [k, P] float32: row i is node i's mean-loss gradient
  at::Tensor loss;  // [k] float32: each node's mean loss (detached)
};

// Forward and backward of k nodes, `nodes_per_pass` nodes at a time (0 = all k in one pass).
// One pass over all nodes is the GPU's choice (few, large kernels). On the CPU smaller passes
// win: a pass's activations then stay in cache (docs/benchmarks.md). The result does not depend
// on the pass size (tested).
// x: [k, P] float32 parameters; buffers: each [k, ...], updated in place (BatchNorm);
// inputs: [k, b, C, H, W] float32; targets: [k, b] int64. draws: the stochastic-rounding draws of
// this step (8-bit models), draws.first_node the global id of row 0 of x.
GradientResult compute_gradients(const Model& model, const at::Tensor& x,
                                 std::vector<at::Tensor>& buffers, const at::Tensor& inputs,
                                 const at::Tensor& targets, std::int64_t nodes_per_pass,
                                 nn::ConvAlgorithm conv_algorithm,
                                 const quant::DrawKey& draws = {});

// The pass size of run.nodes_per_pass = 0 (automatic), with grouped convolutions. A GPU takes all
// k nodes in one pass. The CPU takes up to kCpuNodesPerPass: one grouped pass measured 1.03-1.05x
// one node per pass for 8 and 16 ResNet-20 nodes on a 2-core CPU, and the cap bounds the
// activations a pass holds for backward when there are hundreds of nodes (docs/benchmarks.md).
inline constexpr std::int64_t kCpuNodesPerPass = 16;
std::int64_t automatic_nodes_per_pass(std::int64_t k, bool on_gpu);

}  // namespace lpdt::models
