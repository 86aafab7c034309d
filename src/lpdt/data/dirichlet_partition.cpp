#include "lpdt/data/dirichlet_partition.h"

#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "lpdt/core/error.h"
#include "lpdt/core/rng.h"
#include "lpdt/data/partition_checks.h"

namespace lpdt::data {

Partition partition_dirichlet(const torch::Tensor& labels, int64_t num_nodes, std::uint64_t seed,
                              const DirichletOptions& options) {
  const std::string who = "dirichlet partition";
  if (!(options.alpha_ > 0.0) || !std::isfinite(options.alpha_)) {
    throw ConfigError(who + ": alpha must be a finite value > 0, got " +
                      (std::ostringstream() << options.alpha_).str());
  }
  if (options.min_samples_ < 0) {
    throw ConfigError(who + ": min_samples must be >= 0, got " +
                      std::to_string(options.min_samples_));
  }
  if (options.max_tries_ < 1) {
    throw ConfigError(who + ": max_tries must be >= 1, got " + std::to_string(options.max_tries_));
  }
  const std::vector<int64_t> y = detail::checked_labels(labels, who);
  const auto n_samples = static_cast<int64_t>(y.size());
  detail::check_num_nodes(num_nodes, n_samples, who);
  if (num_nodes * options.min_samples_ > n_samples) {
    throw ConfigError(who + ": " + std::to_string(num_nodes) + " nodes (graph.nodes) x " +
                      std::to_string(options.min_samples_) +
                      " least samples each (data.dirichlet_min_samples) exceed the " +
                      std::to_string(n_samples) +
                      " training samples: lower either, or train on more data");
  }

  // Class members in ascending index order; each try reshuffles them.
  const std::vector<int64_t> order = detail::stable_class_order(y);
  const std::vector<int64_t> counts = detail::count_classes(y);

  Rng rng = Rng::stream(seed, 0, StreamPurpose::kPartition);
  std::vector<double> g(static_cast<std::size_t>(num_nodes));
  int64_t smallest = 0;
  for (int64_t attempt = 0; attempt < options.max_tries_; ++attempt) {
    Partition partition;
    partition.node_indices.resize(num_nodes);
    int64_t start = 0;
    for (int64_t n_c : counts) {
      std::vector<int64_t> members(order.begin() + start, order.begin() + start + n_c);
      start += n_c;
      if (n_c == 0) continue;
      lpdt::shuffle(members.begin(), members.end(), rng);
      double total = 0.0;
      for (double& gk : g) {
        gk = rng.gamma(options.alpha_);
        total += gk;
      }
      if (!(total > 0.0)) {
        // Every Gamma(alpha) draw underflowed (alpha of order 1e-3 or less): the Dirichlet is
        // then, to double precision, a one-hot vector at a uniformly chosen node.
        std::fill(g.begin(), g.end(), 0.0);
        g[rng.below(static_cast<std::uint64_t>(num_nodes))] = 1.0;
        total = 1.0;
      }
      double cumulative = 0.0;
      int64_t lo = 0;
      for (int64_t k = 0; k < num_nodes; ++k) {
        cumulative += g[k];
        int64_t hi =
            k + 1 == num_nodes
                ? n_c
                : static_cast<int64_t>(std::floor(static_cast<double>(n_c) * (cumulative / total)));
        hi = std::clamp(hi, lo, n_c);
        partition.node_indices[k].insert(partition.node_indices[k].end(), members.begin() + lo,
                                         members.begin() + hi);
        lo = hi;
      }
    }
    smallest = n_samples;
    for (const auto& node : partition.node_indices) {
      smallest = std::min<int64_t>(smallest, static_cast<int64_t>(node.size()));
    }
    if (smallest >= options.min_samples_) return partition;
  }
  throw ConfigError(who + ": no draw gave every one of the " + std::to_string(num_nodes) +
                    " nodes at least " + std::to_string(options.min_samples_) +
                    " samples (data.dirichlet_min_samples) in " +
                    std::to_string(options.max_tries_) + " tries (data.dirichlet_alpha " +
                    (std::ostringstream() << options.alpha_).str() +
                    ", last draw's smallest node: " +
                    std::to_string(smallest) +
                    "); lower data.dirichlet_min_samples or graph.nodes, or raise "
                    "data.dirichlet_alpha (shares closer to equal)");
}

}  // namespace lpdt::data
