#include "lpdt/graph/mixing.h"

#include <algorithm>

#include "lpdt/core/error.h"

namespace lpdt::graph {

MixingRule parse_mixing_rule(std::string_view name) {
  if (name == "uniform") return MixingRule::kUniform;
  if (name == "metropolis") return MixingRule::kMetropolis;
  throw ConfigError("unknown mixing rule '" + std::string(name) +
                    "'; expected one of: uniform, metropolis");
}

std::string_view mixing_rule_name(MixingRule rule) {
  switch (rule) {
    case MixingRule::kUniform:
      return "uniform";
    case MixingRule::kMetropolis:
      return "metropolis";
  }
  LPDT_CHECK(false, "unhandled MixingRule");
}

std::vector<double> mixing_weights(std::string_view topology_name, std::int64_t num_nodes,
                                   const std::vector<std::vector<std::int64_t>>& out_neighbors,
                                   MixingRule rule) {
  const std::int64_t n = num_nodes;
  LPDT_CHECK(static_cast<std::int64_t>(out_neighbors.size()) == n,
             "out_neighbors has one list per node");
  std::vector<double> w(n * n, 0.0);  // W[i * n + j]
  switch (rule) {
    case MixingRule::kUniform:
      // UniformMixing (reference spec 3.2): w = 1/(|out_peers| + 1) kept and sent to each peer.
      for (std::int64_t j = 0; j < n; ++j) {
        const double share = 1.0 / static_cast<double>(out_neighbors[j].size() + 1);
        w[j * n + j] = share;
        for (const std::int64_t i : out_neighbors[j]) w[i * n + j] = share;
      }
      return w;
    case MixingRule::kMetropolis: {
      // Metropolis-Hastings weights (Xiao & Boyd 2004, eq. 12 with the "max-degree" pairing):
      // W_ij = 1 / (1 + max(d_i, d_j)) for each link, W_ii = 1 - sum_{j != i} W_ij.
      for (std::int64_t j = 0; j < n; ++j) {
        for (const std::int64_t i : out_neighbors[j]) {
          const auto& back = out_neighbors[i];
          if (!std::binary_search(back.begin(), back.end(), j)) {
            throw ConfigError(
                "mixing 'metropolis' needs an undirected graph (each edge j -> i "
                "paired with i -> j); topology '" +
                std::string(topology_name) + "' has the edge " + std::to_string(j) + " -> " +
                std::to_string(i) + " but not " + std::to_string(i) + " -> " + std::to_string(j) +
                "; use mixing 'uniform' instead");
          }
        }
      }
      for (std::int64_t i = 0; i < n; ++i) {
        double off_diagonal = 0.0;
        for (const std::int64_t j : out_neighbors[i]) {
          const auto degree = std::max(out_neighbors[i].size(), out_neighbors[j].size());
          const double wij = 1.0 / static_cast<double>(1 + degree);
          w[i * n + j] = wij;
          off_diagonal += wij;
        }
        w[i * n + i] = 1.0 - off_diagonal;
      }
      return w;
    }
  }
  LPDT_CHECK(false, "unhandled MixingRule");
}

}  // namespace lpdt::graph
