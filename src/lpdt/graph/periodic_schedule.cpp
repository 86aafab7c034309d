#include "lpdt/graph/periodic_schedule.h"

#include <set>
#include <utility>

#include "lpdt/core/error.h"

namespace lpdt::graph {

PeriodicSchedule::PeriodicSchedule(std::string name, std::vector<Topology> steps, std::string label)
    : name_(std::move(name)),
      label_(label.empty() ? name_ : std::move(label)),
      steps_(std::move(steps)) {
  if (steps_.empty()) {
    throw ConfigError("time-varying topology '" + name_ + "' needs at least one step; got 0");
  }
  const std::int64_t n = steps_.front().num_nodes();
  std::vector<std::set<std::int64_t>> union_out(n);
  for (std::size_t t = 0; t < steps_.size(); ++t) {
    const Topology& step = steps_[t];
    if (step.num_nodes() != n) {
      throw ConfigError("time-varying topology '" + name_ + "': step " + std::to_string(t) +
                        " has " + std::to_string(step.num_nodes()) + " nodes; step 0 has " +
                        std::to_string(n));
    }
    for (std::int64_t j = 0; j < n; ++j) {
      union_out[j].insert(step.out_neighbors(j).begin(), step.out_neighbors(j).end());
    }
  }
  std::vector<std::vector<std::int64_t>> adjacency(n);
  for (std::int64_t j = 0; j < n; ++j)
    adjacency[j].assign(union_out[j].begin(), union_out[j].end());
  std::string witness;
  if (!strongly_connected(adjacency, &witness)) {
    throw ConfigError(
        "time-varying topology '" + name_ + "': the union of its graphs over one period (" +
        std::to_string(steps_.size()) + " steps) is not strongly connected: " + witness);
  }
}

const Topology& PeriodicSchedule::at(std::int64_t step) const {
  if (step < 0) throw UserError("gossip step must be >= 0; got " + std::to_string(step));
  return steps_[static_cast<std::size_t>(step % period())];
}

}  // namespace lpdt::graph
