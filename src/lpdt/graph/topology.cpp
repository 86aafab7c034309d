#include "lpdt/graph/topology.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <iomanip>
#include <set>
#include <sstream>
#include <utility>

#include "lpdt/core/error.h"

namespace lpdt::graph {
namespace {

std::string topology_named(const std::string& name) { return "topology '" + name + "'"; }

// Breadth-first search from node 0 along `adjacency`; returns the first node not reached, or -1.
std::int64_t first_unreached(const std::vector<std::vector<std::int64_t>>& adjacency) {
  const auto n = static_cast<std::int64_t>(adjacency.size());
  if (n == 0) return -1;
  std::vector<bool> seen(n, false);
  std::deque<std::int64_t> queue{0};
  seen[0] = true;
  while (!queue.empty()) {
    const std::int64_t u = queue.front();
    queue.pop_front();
    for (const std::int64_t v : adjacency[u]) {
      if (!seen[v]) {
        seen[v] = true;
        queue.push_back(v);
      }
    }
  }
  for (std::int64_t v = 0; v < n; ++v) {
    if (!seen[v]) return v;
  }
  return -1;
}

std::vector<std::vector<std::int64_t>> reversed(
    const std::vector<std::vector<std::int64_t>>& adjacency) {
  std::vector<std::vector<std::int64_t>> result(adjacency.size());
  for (std::size_t u = 0; u < adjacency.size(); ++u) {
    for (const std::int64_t v : adjacency[u]) result[v].push_back(static_cast<std::int64_t>(u));
  }
  return result;
}

void check_num_nodes(const std::string& name, std::int64_t n) {
  if (n < 1) {
    throw ConfigError(topology_named(name) + " needs at least 1 node; got " + std::to_string(n));
  }
  if (n > kMaxNodes) {
    throw ConfigError(topology_named(name) + " has " + std::to_string(n) +
                      " nodes; a topology has at most " + std::to_string(kMaxNodes));
  }
}

void check_endpoint(const std::string& name, std::int64_t n, std::int64_t node) {
  if (node < 0 || node >= n) {
    throw ConfigError(topology_named(name) + ": edge endpoint " + std::to_string(node) +
                      " is not a node id in [0, " + std::to_string(n) + ")");
  }
}

}  // namespace

bool strongly_connected(const std::vector<std::vector<std::int64_t>>& out_neighbors,
                        std::string* witness) {
  // Strongly connected <=> node 0 reaches every node and every node reaches node 0.
  if (const std::int64_t v = first_unreached(out_neighbors); v >= 0) {
    if (witness) *witness = "node " + std::to_string(v) + " cannot be reached from node 0";
    return false;
  }
  if (const std::int64_t v = first_unreached(reversed(out_neighbors)); v >= 0) {
    if (witness) *witness = "node 0 cannot be reached from node " + std::to_string(v);
    return false;
  }
  return true;
}

Topology::Topology(std::string name, std::int64_t num_nodes, std::vector<double> weights,
                   std::string mixing, Connectivity connectivity)
    : name_(std::move(name)),
      label_(name_),
      mixing_(std::move(mixing)),
      num_nodes_(num_nodes),
      weights_(std::move(weights)) {
  const std::int64_t n = num_nodes_;
  check_num_nodes(name_, n);
  if (static_cast<std::int64_t>(weights_.size()) != n * n) {
    throw ConfigError(topology_named(name_) + ": mixing matrix has " +
                      std::to_string(weights_.size()) +
                      " entries; expected n * n = " + std::to_string(n * n));
  }
  auto entry = [&](std::int64_t i, std::int64_t j) {
    std::ostringstream os;
    os.precision(17);
    os << "W[" << i << "][" << j << "] = " << weights_[i * n + j];
    return os.str();
  };
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const double w = weights_[i * n + j];
      if (!std::isfinite(w) || w < 0.0) {
        throw ConfigError(topology_named(name_) + ": mixing weight " + entry(i, j) +
                          " is invalid; weights must be finite and >= 0");
      }
    }
    if (!(weights_[i * n + i] > 0.0)) {
      throw ConfigError(topology_named(name_) + ": node " + std::to_string(i) +
                        " has no self-loop (" + entry(i, i) +
                        "); every node must keep a positive weight for itself");
    }
  }
  // Column-stochastic: node j's mass, split over itself and its out-neighbours, sums to 1.
  for (std::int64_t j = 0; j < n; ++j) {
    double sum = 0.0;
    for (std::int64_t i = 0; i < n; ++i) sum += weights_[i * n + j];
    if (std::abs(sum - 1.0) > kStochasticTolerance) {
      std::ostringstream os;
      os.precision(17);
      os << topology_named(name_) << ": column " << j << " of the mixing matrix (node " << j
         << "'s self and outgoing weights) sums to " << sum
         << "; expected 1 (column-stochastic, tolerance " << std::setprecision(3)
         << kStochasticTolerance << ")";
      throw ConfigError(os.str());
    }
  }
  out_neighbors_.assign(n, {});
  in_neighbors_.assign(n, {});
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      if (i != j && weights_[i * n + j] > 0.0) {
        out_neighbors_[j].push_back(i);  // ascending i for every j
        in_neighbors_[i].push_back(j);   // ascending j for every i
        ++num_edges_;
      }
    }
  }
  std::string witness;
  strongly_connected_ = strongly_connected(out_neighbors_, &witness);
  if (connectivity == Connectivity::kStronglyConnected && !strongly_connected_) {
    throw ConfigError(topology_named(name_) + " is not strongly connected: " + witness +
                      "; gossip would never reach consensus");
  }
}

Topology Topology::from_matrix(std::string name, std::int64_t num_nodes,
                               std::vector<double> weights, Connectivity connectivity) {
  return Topology(std::move(name), num_nodes, std::move(weights), "custom", connectivity);
}

Topology Topology::from_matrix(std::string name, const at::Tensor& weights,
                               Connectivity connectivity) {
  if (weights.dim() != 2 || weights.size(0) != weights.size(1) ||
      !at::isFloatingType(weights.scalar_type())) {
    std::ostringstream os;
    os << topology_named(name)
       << ": mixing matrix must be a square floating-point tensor [n, n]; got "
       << weights.scalar_type() << " of shape " << weights.sizes();
    throw ConfigError(os.str());
  }
  at::Tensor w = weights.to(at::kCPU, at::kDouble).contiguous();
  if (weights.scalar_type() != at::kDouble && w.numel() > 0) {
    // Rounded to the narrower type, a column of weights summing to 1 sums to 1 only within
    // about n of its epsilons: within that, the rounding is undone; beyond it, the constructor
    // names the column.
    const at::ScalarType type = weights.scalar_type();
    const double epsilon = type == at::kBFloat16 ? 0x1p-7 : type == at::kHalf ? 0x1p-10 : 0x1p-23;
    const at::Tensor sums = w.sum(0, /*keepdim=*/true);  // [1, n]
    const double bound = static_cast<double>(w.size(0)) * epsilon;
    const at::Tensor rounding_only = (sums - 1).abs() <= bound;  // [1, n]; false for NaN
    w = at::where(rounding_only, w / sums, w).contiguous();
  }
  const double* data = w.data_ptr<double>();
  return from_matrix(std::move(name), w.size(0), std::vector<double>(data, data + w.numel()),
                     connectivity);
}

Topology Topology::from_weighted_edges(std::string name, std::int64_t num_nodes,
                                       const std::vector<WeightedEdge>& edges,
                                       Connectivity connectivity) {
  check_num_nodes(name, num_nodes);
  std::vector<double> weights(num_nodes * num_nodes, 0.0);
  std::set<std::pair<std::int64_t, std::int64_t>> seen;
  for (const WeightedEdge& e : edges) {
    check_endpoint(name, num_nodes, e.src);
    check_endpoint(name, num_nodes, e.dst);
    if (!seen.emplace(e.src, e.dst).second) {
      throw ConfigError(topology_named(name) + ": edge " + std::to_string(e.src) + " -> " +
                        std::to_string(e.dst) + " is given twice; give each weight once");
    }
    weights[e.dst * num_nodes + e.src] = e.weight;
  }
  return from_matrix(std::move(name), num_nodes, std::move(weights), connectivity);
}

Topology Topology::from_edges(std::string name, std::int64_t num_nodes,
                              const std::vector<Edge>& edges, MixingRule rule,
                              Connectivity connectivity) {
  check_num_nodes(name, num_nodes);
  std::vector<std::set<std::int64_t>> sets(num_nodes);
  for (const Edge& e : edges) {
    check_endpoint(name, num_nodes, e.src);
    check_endpoint(name, num_nodes, e.dst);
    if (e.src != e.dst) sets[e.src].insert(e.dst);
  }
  std::vector<std::vector<std::int64_t>> out(num_nodes);
  for (std::int64_t j = 0; j < num_nodes; ++j) out[j].assign(sets[j].begin(), sets[j].end());
  std::vector<double> weights = mixing_weights(name, num_nodes, out, rule);
  return Topology(std::move(name), num_nodes, std::move(weights),
                  std::string(mixing_rule_name(rule)), connectivity);
}

Topology& Topology::set_label(std::string label) {
  label_ = std::move(label);
  return *this;
}

const Topology& Topology::at(std::int64_t step) const {
  if (step < 0) throw UserError("gossip step must be >= 0; got " + std::to_string(step));
  return *this;
}

void Topology::check_node(std::int64_t node) const {
  if (node < 0 || node >= num_nodes_) {
    throw UserError("node " + std::to_string(node) + " out of range [0, " +
                    std::to_string(num_nodes_) + ") in " + topology_named(name_));
  }
}

double Topology::weight(std::int64_t i, std::int64_t j) const {
  check_node(i);
  check_node(j);
  return weights_[i * num_nodes_ + j];
}

at::Tensor Topology::mixing_matrix(at::ScalarType dtype) const {
  if (!at::isFloatingType(dtype)) {
    throw ConfigError(topology_named(name_) + ": a mixing matrix holds weights in [0, 1], so " +
                      "its type is a floating-point one, not " + std::string(c10::toString(dtype)));
  }
  at::Tensor w = at::empty({num_nodes_, num_nodes_}, at::TensorOptions().dtype(at::kDouble));
  std::copy(weights_.begin(), weights_.end(), w.data_ptr<double>());
  return dtype == at::kDouble ? w : w.to(dtype);
}

const std::vector<std::int64_t>& Topology::out_neighbors(std::int64_t j) const {
  check_node(j);
  return out_neighbors_[j];
}

const std::vector<std::int64_t>& Topology::in_neighbors(std::int64_t i) const {
  check_node(i);
  return in_neighbors_[i];
}

std::int64_t Topology::out_degree(std::int64_t j) const {
  return static_cast<std::int64_t>(out_neighbors(j).size());
}

std::int64_t Topology::in_degree(std::int64_t i) const {
  return static_cast<std::int64_t>(in_neighbors(i).size());
}

std::vector<WeightedEdge> Topology::edges() const {
  std::vector<WeightedEdge> result;
  result.reserve(num_edges_);
  for (std::int64_t j = 0; j < num_nodes_; ++j) {
    for (const std::int64_t i : out_neighbors_[j]) {
      result.push_back({j, i, weights_[i * num_nodes_ + j]});
    }
  }
  return result;
}

bool Topology::is_doubly_stochastic() const {
  for (std::int64_t i = 0; i < num_nodes_; ++i) {
    double sum = 0.0;
    for (std::int64_t j = 0; j < num_nodes_; ++j) sum += weights_[i * num_nodes_ + j];
    if (std::abs(sum - 1.0) > kStochasticTolerance) return false;
  }
  return true;
}

bool Topology::is_undirected() const {
  for (std::int64_t i = 0; i < num_nodes_; ++i) {
    for (std::int64_t j = i + 1; j < num_nodes_; ++j) {
      if ((weights_[i * num_nodes_ + j] > 0.0) != (weights_[j * num_nodes_ + i] > 0.0)) {
        return false;
      }
    }
  }
  return true;
}

bool Topology::is_symmetric() const {
  for (std::int64_t i = 0; i < num_nodes_; ++i) {
    for (std::int64_t j = i + 1; j < num_nodes_; ++j) {
      if (std::abs(weights_[i * num_nodes_ + j] - weights_[j * num_nodes_ + i]) >
          kStochasticTolerance) {
        return false;
      }
    }
  }
  return true;
}

bool Topology::is_regular() const {
  const std::size_t d = out_neighbors_[0].size();
  for (std::int64_t i = 0; i < num_nodes_; ++i) {
    if (out_neighbors_[i].size() != d || in_neighbors_[i].size() != d) return false;
  }
  return true;
}

}  // namespace lpdt::graph
