// lpdt as a library: decentralized training of a model of your own with lpdt's algorithm layer.
//
// Eight nodes each hold data no other node sees, drawn from a distribution of their own (non-IID:
// node i's inputs are centred at a point of its own), and fit one linear model y = a . w + c by
// least squares. Each step, every node takes the gradient of its own loss with LibTorch's
// autograd, and one DecentralizedOptimizer::step does the rest for all nodes at once: the local
// SGD step with momentum, then one round of Choco-SGD gossip over the directed exponential graph,
// each message the top 30% of every parameter tensor with error feedback (docs/algorithms.md).
//
// The nodes never share data, yet all of them end at the least-squares fit of the union of their
// data (computed here centrally, for the check): the program checks that every node is within 1%
// of it and exits 1 otherwise. Build: cmake --build build --target gossip_least_squares; run:
// ./build/examples/gossip_least_squares.
#include <ATen/ATen.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>

#include "lpdt/algo/decentralized_optimizer.h"
#include "lpdt/core/error.h"
#include "lpdt/core/layer_layout.h"
#include "lpdt/graph/factory.h"
#include "lpdt/graph/spectral.h"
#include "lpdt/graph/topology.h"

namespace {

constexpr std::int64_t kNodes = 8;
constexpr std::int64_t kFeatures = 10;
constexpr std::int64_t kSamplesPerNode = 64;
constexpr std::int64_t kSteps = 3000;

// Node i's data: inputs [n, m, d] centred at its own mean, targets [n, m] from one true model
// plus noise (the same task everywhere, seen through different inputs).
struct NodeData {
  at::Tensor inputs;   // [n, m, d]
  at::Tensor targets;  // [n, m]
};

NodeData make_node_data() {
  torch::manual_seed(7);
  const at::Tensor centres = 2.0 * at::randn({kNodes, 1, kFeatures});  // one per node
  const at::Tensor inputs = centres + at::randn({kNodes, kSamplesPerNode, kFeatures});
  const at::Tensor true_weight = at::randn({kFeatures});
  const double true_bias = 0.5;
  const at::Tensor targets =
      at::matmul(inputs, true_weight) + true_bias + 0.1 * at::randn({kNodes, kSamplesPerNode});
  return {inputs, targets};
}

// The least-squares fit [d + 1] (weight, then bias) of inputs [N, d] and targets [N].
at::Tensor least_squares(const at::Tensor& inputs, const at::Tensor& targets) {
  const at::Tensor design = at::cat({inputs, at::ones({inputs.size(0), 1})}, 1);  // [N, d + 1]
  const at::Tensor normal = at::matmul(design.t(), design);
  return at::linalg_solve(normal, at::matmul(design.t(), targets.unsqueeze(1))).squeeze(1);
}

// What a single machine holding every sample would compute, and what the nodes must agree on.
at::Tensor central_fit(const NodeData& data) {
  return least_squares(data.inputs.reshape({-1, kFeatures}), data.targets.reshape({-1}));
}

// Every node's loss gradient at its own parameters x [n, P] -> [n, P]: the mean squared error
// over its samples, one autograd pass for all nodes (row i depends on node i's data only).
at::Tensor local_gradients(const at::Tensor& x, const NodeData& data) {
  const at::Tensor params = x.detach().requires_grad_(true);
  const at::Tensor weight = params.narrow(1, 0, kFeatures);  // [n, d]
  const at::Tensor bias = params.narrow(1, kFeatures, 1);    // [n, 1]
  const at::Tensor predictions =
      at::bmm(data.inputs, weight.unsqueeze(2)).squeeze(2) + bias;  // [n, m]
  const at::Tensor loss = 0.5 * (predictions - data.targets).pow(2).mean(1).sum();
  loss.backward();
  return params.grad();
}

int run() {
  const NodeData data = make_node_data();

  // The model's parameter tensors, as the algorithms see them: columns of one [n, P] tensor.
  lpdt::LayerLayout layout;
  layout.append("weight", {kFeatures});
  layout.append("bias", {1});

  const auto topology = lpdt::graph::make_topology(
      lpdt::graph::TopologyOptions().name("exponential").num_nodes(kNodes));
  const lpdt::graph::Topology& graph = topology->at(0);
  const at::Tensor mixing = graph.mixing_matrix(at::kFloat);  // W [n, n], column-stochastic

  lpdt::algo::DecentralizedOptimizer optimizer(
      lpdt::algo::DecentralizedOptions()
          .algorithm("choco")
          .eta(0.5)
          .momentum(0.9)
          .weight_decay(0.0)
          .compressor(lpdt::compress::CompressorOptions().name("topk").keep_fraction(0.3)),
      kNodes, layout);
  lpdt::metrics::ByteLedger ledger = optimizer.make_ledger();

  at::Tensor x = at::zeros({kNodes, layout.total_numel});  // every node starts at 0
  for (std::int64_t step = 0; step < kSteps; ++step) {
    // A learning rate that decays, so that the nodes settle on the fit rather than near it.
    const double lr = 0.02 / (1.0 + static_cast<double>(step) / 300.0);
    optimizer.step(x, local_gradients(x, data), mixing, lr, step, ledger);
  }

  const at::Tensor fit = central_fit(data);  // [P]
  const at::Tensor errors = (x - fit).norm(2, 1) / fit.norm();  // [n]: each node's distance
  const double worst = errors.max().item<double>();
  // For scale: how far each node's fit of its own data alone is from the central fit.
  double alone = 0;
  for (std::int64_t i = 0; i < kNodes; ++i) {
    const at::Tensor own = least_squares(data.inputs[i], data.targets[i]);
    alone = std::max(alone, ((own - fit).norm() / fit.norm()).item<double>());
  }
  std::printf("%s, %lld nodes (spectral gap %.3f), Choco-SGD with top-30%% messages\n",
              graph.label().c_str(), static_cast<long long>(kNodes),
              lpdt::graph::spectral_info(graph).spectral_gap);
  std::printf("after %lld steps: largest relative distance of a node to the central fit %.2e\n",
              static_cast<long long>(kSteps), worst);
  std::printf("(a node fitting its own data alone: %.2e)\n", alone);
  std::printf("bytes sent per node: %.1f kB (%lld rounds)\n",
              static_cast<double>(ledger.total_bytes_sent()) / kNodes / 1e3,
              static_cast<long long>(ledger.rounds_counted()));
  if (!(worst < 1e-2)) {
    std::fprintf(stderr, "error: a node ended %.2e (relative) from the central fit; expected "
                         "under 1e-2\n", worst);
    return 1;
  }
  return 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const lpdt::UserError& e) {  // a bad option (ConfigError) or input
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error: %s\n", e.what());
    return 3;
  }
}
