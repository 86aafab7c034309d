#pragma once
// make_topology: a topology (static or time-varying) from its name and options, as given in an
// experiment config or on the command line (`lpdt topo`).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lpdt/graph/schedule.h"

namespace lpdt::graph {

// Options with chained setters; every field is recorded in the resolved config of a run.
// Options of other topologies (rows and cols for "torus", random_* for "random") are ignored, as a
// config file carries every field with its default; the label of the result names the
// parameters that were used.
class TopologyOptions {
 public:
  // One of topology_names(): "directed-ring", "ring", "torus", "complete", "exponential",
  // "random", "one-peer-exponential". Default: the official code's directed ring.
  TopologyOptions& name(std::string v) {
    name_ = std::move(v);
    return *this;
  }
  TopologyOptions& num_nodes(std::int64_t v) {
    num_nodes_ = v;
    return *this;
  }
  // "uniform" (default) or "metropolis" (undirected graphs only).
  TopologyOptions& mixing(std::string v) {
    mixing_ = std::move(v);
    return *this;
  }
  // Root seed; only the random digraph draws from it.
  TopologyOptions& seed(std::uint64_t v) {
    seed_ = v;
    return *this;
  }
  // Torus shape; 0 = choose (the most square factorisation of num_nodes, or n / the other one).
  TopologyOptions& rows(std::int64_t v) {
    rows_ = v;
    return *this;
  }
  TopologyOptions& cols(std::int64_t v) {
    cols_ = v;
    return *this;
  }
  // Random digraph: out-degree, or edge probability (at most one; default out-degree 2).
  TopologyOptions& random_out_degree(std::int64_t v) {
    random_out_degree_ = v;
    return *this;
  }
  TopologyOptions& random_edge_probability(double v) {
    random_edge_probability_ = v;
    return *this;
  }

  const std::string& name() const { return name_; }
  std::int64_t num_nodes() const { return num_nodes_; }
  const std::string& mixing() const { return mixing_; }
  std::uint64_t seed() const { return seed_; }
  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  const std::optional<std::int64_t>& random_out_degree() const { return random_out_degree_; }
  const std::optional<double>& random_edge_probability() const { return random_edge_probability_; }

 private:
  std::string name_ = "directed-ring";
  std::int64_t num_nodes_ = 8;
  std::string mixing_ = "uniform";
  std::uint64_t seed_ = 0;
  std::int64_t rows_ = 0;
  std::int64_t cols_ = 0;
  std::optional<std::int64_t> random_out_degree_;
  std::optional<double> random_edge_probability_;
};

// The accepted topology names, in documentation order.
const std::vector<std::string>& topology_names();

// Builds and validates the topology. A static topology is returned as a Topology (period 1),
// "one-peer-exponential" as a PeriodicSchedule. Throws ConfigError for an unknown name (listing
// the accepted ones) or any invalid option.
// ConfigError for an unknown name or a node count outside [1, kMaxNodes].
std::unique_ptr<TopologySchedule> make_topology(const TopologyOptions& options);

}  // namespace lpdt::graph
