#pragma once
// Mixing rules: how a graph's edges become the weights of its mixing matrix W (docs/graph.md).
//
// Convention (the paper's and the official code's): W[i][j] is the weight node i gives to the
// message from node j (edge j -> i); W is column-stochastic (node j splits its mass over itself
// and its out-neighbours).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lpdt::graph {

enum class MixingRule {
  // Node j keeps 1/(d_out(j)+1) and sends the same to each out-neighbour: column-stochastic on any
  // digraph (official code, mixing_manager.py UniformMixing; reference spec 3.2).
  kUniform,
  // Metropolis-Hastings (Xiao & Boyd 2004): W_ij = 1/(1+max(d_i,d_j)) on an edge, the rest on the
  // self-loop. Symmetric and doubly stochastic; defined for undirected graphs only.
  kMetropolis,
};

// "uniform" or "metropolis"; a ConfigError naming the accepted names otherwise.
MixingRule parse_mixing_rule(std::string_view name);
std::string_view mixing_rule_name(MixingRule rule);

// The weights of `rule` on the graph with the given out-neighbour lists (self excluded, no
// duplicates, ids in [0, n)). Returns W row-major, W[i * n + j], float64.
// Throws ConfigError (naming `topology_name`) for kMetropolis on a graph that is not undirected.
std::vector<double> mixing_weights(std::string_view topology_name, std::int64_t num_nodes,
                                   const std::vector<std::vector<std::int64_t>>& out_neighbors,
                                   MixingRule rule);

}  // namespace lpdt::graph
