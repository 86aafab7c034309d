#pragma once
// Topology: one object that is a weighted directed graph AND its mixing matrix (BlueFog style).
//
// Conventions (docs/graph.md; the paper's and the official code's, reference spec 3.1-3.3):
//  - W is n x n; W[i][j] is the weight node i gives to the message from node j, i.e. the weight
//    of the directed edge j -> i. Gossip is x_i <- sum_j W[i][j] x_j, i.e. x <- W x.
//  - Every node has a self-loop (W[i][i] > 0); no weight is negative.
//  - W is column-stochastic: node j splits its mass over itself and its out-neighbours,
//    sum_i W[i][j] = 1 (to kStochasticTolerance). This keeps sum_i x_i invariant, which is what
//    push-sum needs on directed graphs.
//  - The graph is strongly connected (checked once, at construction). A step of a time-varying
//    schedule may skip that check; its schedule checks the union over a period instead.
// Every failed check is an lpdt::ConfigError whose message names the topology and the value.
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lpdt/graph/mixing.h"
#include "lpdt/graph/schedule.h"

namespace lpdt::graph {

// Tolerance on column sums (and on row sums / symmetry in the is_* queries).
inline constexpr double kStochasticTolerance = 1e-12;

// A directed edge: `dst` receives `src`'s message.
struct Edge {
  std::int64_t src = 0;
  std::int64_t dst = 0;
};

// A directed edge with its mixing weight W[dst][src]; src == dst gives a node's self weight.
struct WeightedEdge {
  std::int64_t src = 0;
  std::int64_t dst = 0;
  double weight = 0.0;
};

// Whether construction requires strong connectivity.
enum class Connectivity {
  kStronglyConnected,  // every standalone topology
  kUnchecked,          // one step of a time-varying schedule (the schedule checks the union)
};

class Topology final : public TopologySchedule {
 public:
  // From a dense matrix, row-major: weights[i * n + j] = W[i][j]. Mixing name "custom". Every
  // constructor takes 1 to kMaxNodes nodes.
  static Topology from_matrix(std::string name, std::int64_t num_nodes, std::vector<double> weights,
                              Connectivity connectivity = Connectivity::kStronglyConnected);
  // From a tensor [n, n] of any floating dtype. A float64 tensor is taken as it is; one of a
  // narrower type (float32, bfloat16, half: mixing_matrix(at::kFloat) for one) is taken at its
  // own precision: its columns must sum to 1 within n times its machine epsilon, and are then
  // divided by their sums in float64, so that they sum to 1 as kStochasticTolerance asks.
  static Topology from_matrix(std::string name, const at::Tensor& weights,
                              Connectivity connectivity = Connectivity::kStronglyConnected);
  // From explicit weights; entries with src == dst are self weights. A repeated (src, dst) pair
  // is a ConfigError. Mixing name "custom".
  static Topology from_weighted_edges(std::string name, std::int64_t num_nodes,
                                      const std::vector<WeightedEdge>& edges,
                                      Connectivity connectivity = Connectivity::kStronglyConnected);
  // From an unweighted edge list and a mixing rule. Self edges (implied anyway) and repeats are
  // ignored.
  static Topology from_edges(std::string name, std::int64_t num_nodes,
                             const std::vector<Edge>& edges, MixingRule rule = MixingRule::kUniform,
                             Connectivity connectivity = Connectivity::kStronglyConnected);

  // Sets the human-readable label (defaults to the name); cosmetic, never validated.
  Topology& set_label(std::string label);

  // TopologySchedule: a static topology is its own graph at every step.
  const Topology& at(std::int64_t step) const override;
  std::int64_t period() const override { return 1; }
  std::int64_t num_nodes() const override { return num_nodes_; }
  const std::string& name() const override { return name_; }
  const std::string& label() const override { return label_; }

  // "uniform", "metropolis" or "custom".
  const std::string& mixing() const { return mixing_; }

  // W[i][j]: the weight node i gives to node j's message (0 when there is no edge j -> i).
  double weight(std::int64_t i, std::int64_t j) const;
  double self_weight(std::int64_t i) const { return weight(i, i); }
  // W row-major, W[i * n + j], float64.
  const std::vector<double>& weights() const { return weights_; }
  // W as a tensor: [n, n], `dtype` (default float64; float32 rounds, so its columns sum to 1 only
  // to float32 precision). ConfigError for a type that is not floating-point.
  at::Tensor mixing_matrix(at::ScalarType dtype = at::kDouble) const;

  // Neighbour lists, self excluded, sorted ascending.
  const std::vector<std::int64_t>& out_neighbors(std::int64_t j) const;  // {i : edge j -> i}
  const std::vector<std::int64_t>& in_neighbors(std::int64_t i) const;   // {j : edge j -> i}
  std::int64_t out_degree(std::int64_t j) const;
  std::int64_t in_degree(std::int64_t i) const;
  // Directed edges without self-loops, sorted by (src, dst); an undirected link counts twice.
  std::int64_t num_edges() const { return num_edges_; }
  std::vector<WeightedEdge> edges() const;

  // Rows also sum to 1 (to kStochasticTolerance): plain gossip x <- W x converges to the mean.
  bool is_doubly_stochastic() const;
  // The edge set is symmetric: j -> i exactly when i -> j (weights may differ).
  bool is_undirected() const;
  // W == W^T (to kStochasticTolerance).
  bool is_symmetric() const;
  // Every node has the same in- and out-degree.
  bool is_regular() const;
  bool is_strongly_connected() const { return strongly_connected_; }

 private:
  Topology(std::string name, std::int64_t num_nodes, std::vector<double> weights,
           std::string mixing, Connectivity connectivity);
  void check_node(std::int64_t node) const;

  std::string name_;
  std::string label_;
  std::string mixing_;
  std::int64_t num_nodes_ = 0;
  std::vector<double> weights_;  // [n * n] row-major float64
  std::vector<std::vector<std::int64_t>> out_neighbors_;
  std::vector<std::vector<std::int64_t>> in_neighbors_;
  std::int64_t num_edges_ = 0;
  bool strongly_connected_ = false;
};

// Whether every node reaches every other along the directed edges given as out-neighbour lists.
// On failure, `*witness` (if not null) describes one unreachable pair.
bool strongly_connected(const std::vector<std::vector<std::int64_t>>& out_neighbors,
                        std::string* witness = nullptr);

}  // namespace lpdt::graph
