#include "lpdt/graph/factory.h"

#include "lpdt/core/error.h"
#include "lpdt/graph/builders.h"

namespace lpdt::graph {
namespace {

std::string joined_names() {
  std::string out;
  for (const std::string& name : topology_names()) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

std::unique_ptr<TopologySchedule> owned(Topology topology) {
  return std::make_unique<Topology>(std::move(topology));
}

}  // namespace

const std::vector<std::string>& topology_names() {
  static const std::vector<std::string> kNames = {
      "directed-ring",       "ring", "torus", "complete", "exponential", "random",
      "one-peer-exponential"};
  return kNames;
}

std::unique_ptr<TopologySchedule> make_topology(const TopologyOptions& options) {
  const std::string& name = options.name();
  const std::int64_t n = options.num_nodes();
  bool known = false;
  for (const std::string& accepted : topology_names()) known = known || accepted == name;
  if (!known) {
    throw ConfigError("unknown topology '" + name + "'; expected one of: " + joined_names());
  }
  if (n < 1 || n > kMaxNodes) {
    throw ConfigError("a topology of " + std::to_string(n) + " nodes: expected 1 to " +
                      std::to_string(kMaxNodes) + " nodes");
  }
  const MixingRule mixing = parse_mixing_rule(options.mixing());
  // Options of other topologies (rows, cols, random_*) are ignored: a config file carries every
  // field with its default, and a sweep over topologies keeps them fixed (docs/graph.md).
  if (name == "directed-ring") return owned(directed_ring(n, mixing));
  if (name == "ring") return owned(ring(n, mixing));
  if (name == "complete") return owned(complete(n, mixing));
  if (name == "exponential") return owned(exponential(n, mixing));
  if (name == "torus") {
    std::int64_t rows = options.rows();
    std::int64_t cols = options.cols();
    if (rows == 0 && cols == 0) {
      const TorusShape shape = most_square_torus(n);
      rows = shape.rows;
      cols = shape.cols;
    } else if (rows == 0 || cols == 0) {
      const std::int64_t given = rows == 0 ? cols : rows;
      if (given <= 0 || n % given != 0) {
        throw ConfigError("topology 'torus' with " + std::to_string(n) + " nodes cannot have " +
                          std::to_string(given) + (rows == 0 ? " columns" : " rows") +
                          "; the node count must be a multiple of it");
      }
      (rows == 0 ? rows : cols) = n / given;
    }
    if (rows * cols != n) {
      throw ConfigError("topology 'torus' with rows x cols = " + std::to_string(rows) + " x " +
                        std::to_string(cols) + " = " + std::to_string(rows * cols) +
                        " nodes; got a node count of " + std::to_string(n));
    }
    return owned(torus(rows, cols, mixing));
  }
  if (name == "random") {
    RandomGraphOptions random(n, options.seed());
    if (options.random_out_degree()) random.out_degree(*options.random_out_degree());
    if (options.random_edge_probability()) {
      random.edge_probability(*options.random_edge_probability());
    }
    return owned(random_digraph(random, mixing));
  }
  // one-peer-exponential: each step has one out-peer and fixed weights 1/2.
  if (mixing != MixingRule::kUniform) {
    throw ConfigError(
        "topology 'one-peer-exponential' is directed and uses weights 1/2, 1/2 (mixing "
        "'uniform'); got mixing '" +
        options.mixing() + "'");
  }
  return std::make_unique<PeriodicSchedule>(one_peer_exponential(n));
}

}  // namespace lpdt::graph
