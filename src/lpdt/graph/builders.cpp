#include "lpdt/graph/builders.h"

#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "lpdt/core/error.h"
#include "lpdt/core/rng.h"

namespace lpdt::graph {
namespace {

void require_nodes(const char* name, std::int64_t n, std::int64_t at_least) {
  if (n < at_least) {
    throw ConfigError("topology '" + std::string(name) + "' needs at least " +
                      std::to_string(at_least) + " node" + (at_least == 1 ? "" : "s") + "; got " +
                      std::to_string(n));
  }
}

std::int64_t wrap(std::int64_t i, std::int64_t n) { return ((i % n) + n) % n; }

// Smallest tau with 2^tau >= n (tau = ceil(log2 n)), n >= 1.
std::int64_t ceil_log2(std::int64_t n) {
  std::int64_t tau = 0;
  while ((std::int64_t{1} << tau) < n) ++tau;
  return tau;
}

}  // namespace

Topology directed_ring(std::int64_t num_nodes, MixingRule mixing) {
  require_nodes("directed-ring", num_nodes, 1);
  std::vector<Edge> edges;
  for (std::int64_t i = 0; i < num_nodes; ++i) edges.push_back({i, wrap(i + 1, num_nodes)});
  return Topology::from_edges("directed-ring", num_nodes, edges, mixing);
}

Topology ring(std::int64_t num_nodes, MixingRule mixing) {
  require_nodes("ring", num_nodes, 1);
  std::vector<Edge> edges;
  for (std::int64_t i = 0; i < num_nodes; ++i) {
    edges.push_back({i, wrap(i + 1, num_nodes)});
    edges.push_back({i, wrap(i - 1, num_nodes)});
  }
  return Topology::from_edges("ring", num_nodes, edges, mixing);
}

TorusShape most_square_torus(std::int64_t num_nodes) {
  TorusShape best;
  for (std::int64_t rows = 3; rows * rows <= num_nodes; ++rows) {
    if (num_nodes % rows == 0) best = {rows, num_nodes / rows};  // the last one is the squarest
  }
  if (best.rows == 0) {
    throw ConfigError(
        "topology 'torus' needs a node count (graph.nodes; lpdt topo --nodes) that is a product "
        "rows x cols with rows, cols >= 3; got " +
        std::to_string(num_nodes));
  }
  return best;
}

Topology torus(std::int64_t rows, std::int64_t cols, MixingRule mixing) {
  if (rows < 3 || cols < 3) {
    // With 2 rows (or columns) the up and down neighbours coincide: not a 4-regular torus.
    throw ConfigError("topology 'torus' needs rows, cols >= 3; got " + std::to_string(rows) +
                      " x " + std::to_string(cols));
  }
  const std::int64_t n = rows * cols;
  std::vector<Edge> edges;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t i = r * cols + c;
      edges.push_back({i, wrap(r - 1, rows) * cols + c});
      edges.push_back({i, wrap(r + 1, rows) * cols + c});
      edges.push_back({i, r * cols + wrap(c - 1, cols)});
      edges.push_back({i, r * cols + wrap(c + 1, cols)});
    }
  }
  Topology t = Topology::from_edges("torus", n, edges, mixing);
  t.set_label("torus " + std::to_string(rows) + "x" + std::to_string(cols));
  return t;
}

Topology complete(std::int64_t num_nodes, MixingRule mixing) {
  require_nodes("complete", num_nodes, 1);
  std::vector<Edge> edges;
  for (std::int64_t j = 0; j < num_nodes; ++j) {
    for (std::int64_t i = 0; i < num_nodes; ++i) {
      if (i != j) edges.push_back({j, i});
    }
  }
  return Topology::from_edges("complete", num_nodes, edges, mixing);
}

Topology exponential(std::int64_t num_nodes, MixingRule mixing) {
  require_nodes("exponential", num_nodes, 1);
  std::vector<Edge> edges;
  // Hops 2^m for m = 0..floor(log2(n - 1)), i.e. every power of two <= n - 1.
  for (std::int64_t i = 0; i < num_nodes; ++i) {
    for (std::int64_t hop = 1; hop <= num_nodes - 1; hop *= 2) {
      edges.push_back({i, wrap(i + hop, num_nodes)});
    }
  }
  return Topology::from_edges("exponential", num_nodes, edges, mixing);
}

Topology random_digraph(const RandomGraphOptions& options, MixingRule mixing) {
  const std::int64_t n = options.num_nodes();
  require_nodes("random", n, 2);
  if (options.out_degree() && options.edge_probability()) {
    throw ConfigError(
        "topology 'random' takes an out-degree or an edge probability, not both; got out-degree " +
        std::to_string(*options.out_degree()) + " and edge probability " +
        std::to_string(*options.edge_probability()));
  }
  const std::int64_t out_degree =
      options.out_degree().value_or(RandomGraphOptions::kDefaultOutDegree);
  if (!options.edge_probability() && (out_degree < 1 || out_degree > n - 1)) {
    throw ConfigError("topology 'random' needs an out-degree in [1, n - 1] = [1, " +
                      std::to_string(n - 1) + "]; got " + std::to_string(out_degree));
  }
  if (options.edge_probability()) {
    const double p = *options.edge_probability();
    if (!(p >= 0.0 && p <= 1.0)) {
      throw ConfigError("topology 'random' needs an edge probability in [0, 1]; got " +
                        std::to_string(p));
    }
  }

  Rng rng = Rng::stream(options.seed(), kGraphStreamNode, StreamPurpose::kGraph);
  // 1. A random directed Hamiltonian cycle perm[0] -> perm[1] -> ... -> perm[n-1] -> perm[0]
  //    makes the graph strongly connected whatever else is drawn.
  std::vector<std::int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  shuffle(perm.begin(), perm.end(), rng);
  std::vector<std::int64_t> successor(n);
  for (std::int64_t k = 0; k < n; ++k) successor[perm[k]] = perm[(k + 1) % n];

  std::vector<Edge> edges;
  for (std::int64_t j = 0; j < n; ++j) edges.push_back({j, successor[j]});
  // 2. Extra edges, node by node in id order (so the draws are a fixed function of the seed).
  for (std::int64_t j = 0; j < n; ++j) {
    std::vector<std::int64_t> candidates;  // ascending: not j, not its cycle successor
    for (std::int64_t i = 0; i < n; ++i) {
      if (i != j && i != successor[j]) candidates.push_back(i);
    }
    if (options.edge_probability()) {
      for (const std::int64_t i : candidates) {
        if (rng.uniform() < *options.edge_probability()) edges.push_back({j, i});
      }
    } else {
      // out_degree - 1 distinct candidates: a partial Fisher-Yates shuffle.
      const auto extra = static_cast<std::size_t>(out_degree - 1);
      for (std::size_t k = 0; k < extra; ++k) {
        const std::size_t pick = k + rng.below(candidates.size() - k);
        std::swap(candidates[k], candidates[pick]);
        edges.push_back({j, candidates[k]});
      }
    }
  }
  Topology t = Topology::from_edges("random", n, edges, mixing);
  std::ostringstream label;
  label << "random (";
  if (options.edge_probability()) {
    label << "edge probability " << *options.edge_probability();
  } else {
    label << "out-degree " << out_degree;
  }
  label << ", seed " << options.seed() << ")";
  t.set_label(label.str());
  return t;
}

PeriodicSchedule one_peer_exponential(std::int64_t num_nodes) {
  require_nodes("one-peer-exponential", num_nodes, 2);
  const std::int64_t tau = ceil_log2(num_nodes);
  std::vector<Topology> steps;
  for (std::int64_t t = 0; t < tau; ++t) {
    const std::int64_t hop = std::int64_t{1} << t;  // 2^t < n since t < ceil(log2 n)
    std::vector<Edge> edges;
    for (std::int64_t i = 0; i < num_nodes; ++i) edges.push_back({i, wrap(i + hop, num_nodes)});
    // One out-peer: uniform mixing keeps 1/2 and sends 1/2 (Ying et al. 2021).
    Topology step = Topology::from_edges("one-peer-exponential", num_nodes, edges,
                                         MixingRule::kUniform, Connectivity::kUnchecked);
    step.set_label("one-peer-exponential hop " + std::to_string(hop));
    steps.push_back(std::move(step));
  }
  return PeriodicSchedule("one-peer-exponential", std::move(steps),
                          "one-peer-exponential (period " + std::to_string(tau) + ")");
}

}  // namespace lpdt::graph
