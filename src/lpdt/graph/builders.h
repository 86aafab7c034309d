#pragma once
// Builders of the standard topologies (docs/graph.md has degrees and spectral gaps for n = 8, 16).
//
// Nodes are 0..n-1. Each builder validates its arguments (ConfigError naming the value and what is
// expected) and returns a validated Topology (strongly connected, column-stochastic, self-loops).
// `mixing` picks the weights (mixing.h); kMetropolis is a ConfigError on a directed graph.
#include <cstdint>
#include <optional>

#include "lpdt/graph/mixing.h"
#include "lpdt/graph/periodic_schedule.h"
#include "lpdt/graph/topology.h"

namespace lpdt::graph {

// Directed ring i -> i+1 mod n, as the official code (RingGraph with peers_per_itr = 1,
// reference spec 3.1): out- and in-degree 1, uniform weights 1/2.
Topology directed_ring(std::int64_t num_nodes, MixingRule mixing = MixingRule::kUniform);

// Undirected ring i <-> i-1, i+1 (mod n): degree 2 (1 for n = 2).
Topology ring(std::int64_t num_nodes, MixingRule mixing = MixingRule::kUniform);

// 2-D torus of rows x cols (rows, cols >= 3): node r * cols + c is linked both ways to its four
// grid neighbours with wrap-around, degree 4. This is the paper's 16-node 4x4 torus (not the
// official code's circulant C_n(1, 4), reference spec 3.1 / 11.1).
Topology torus(std::int64_t rows, std::int64_t cols, MixingRule mixing = MixingRule::kUniform);

struct TorusShape {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
};
// The most square factorisation n = rows x cols with 3 <= rows <= cols; ConfigError if none.
TorusShape most_square_torus(std::int64_t num_nodes);

// Complete graph: every node linked to every other, degree n - 1 (uniform weights 1/n).
Topology complete(std::int64_t num_nodes, MixingRule mixing = MixingRule::kUniform);

// Directed exponential graph: i -> i + 2^m mod n for m = 0..floor(log2(n - 1)) (Assran et al.
// 2019, SGP); degree floor(log2(n - 1)) + 1.
Topology exponential(std::int64_t num_nodes, MixingRule mixing = MixingRule::kUniform);

// Options of the seeded random strongly connected digraph. Give at most one of out_degree and
// edge_probability; with neither, out_degree = kDefaultOutDegree.
class RandomGraphOptions {
 public:
  static constexpr std::int64_t kDefaultOutDegree = 2;

  RandomGraphOptions(std::int64_t num_nodes, std::uint64_t seed)
      : num_nodes_(num_nodes), seed_(seed) {}
  // Every node gets exactly this many out-neighbours (its Hamiltonian-cycle successor plus
  // out_degree - 1 distinct random others); in [1, n - 1].
  RandomGraphOptions& out_degree(std::int64_t d) {
    out_degree_ = d;
    return *this;
  }
  // Every ordered pair not on the cycle becomes an edge with this probability, in [0, 1].
  RandomGraphOptions& edge_probability(double p) {
    edge_probability_ = p;
    return *this;
  }

  std::int64_t num_nodes() const { return num_nodes_; }
  std::uint64_t seed() const { return seed_; }
  const std::optional<std::int64_t>& out_degree() const { return out_degree_; }
  const std::optional<double>& edge_probability() const { return edge_probability_; }

 private:
  std::int64_t num_nodes_;
  std::uint64_t seed_;
  std::optional<std::int64_t> out_degree_;
  std::optional<double> edge_probability_;
};

// Seeded random strongly connected digraph: a random directed Hamiltonian cycle (so it is
// strongly connected) plus random extra edges. In-degrees are irregular, so with uniform weights
// W is column- but not row-stochastic: the graph that needs push-sum. Deterministic in the seed
// (stream Rng::stream(seed, kGraphStreamNode, StreamPurpose::kGraph)).
Topology random_digraph(const RandomGraphOptions& options,
                        MixingRule mixing = MixingRule::kUniform);

// The stream node id of graph-wide random draws: the graph is shared by all nodes, so its
// stream belongs to no real node.
inline constexpr std::uint64_t kGraphStreamNode = ~std::uint64_t{0};

// Time-varying one-peer exponential graph (Ying et al. 2021): at step t node i sends only to
// i + 2^(t mod tau) mod n, tau = ceil(log2 n), and keeps 1/2, sends 1/2. n >= 2. Each step is a
// permutation plus identity (doubly stochastic); for n a power of 2 the product over one period
// is exactly the averaging matrix (1/n) 1 1^T.
PeriodicSchedule one_peer_exponential(std::int64_t num_nodes);

}  // namespace lpdt::graph
