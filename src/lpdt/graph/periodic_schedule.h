#pragma once
// A time-varying topology that repeats with a fixed period: step t runs on steps()[t % period].
//
// Each step's graph is validated as a Topology (column-stochastic, self-loops, no negative
// weights) but need not be strongly connected on its own; the union of the edges over one period
// must be. Because every step keeps its self-loops, the product of one period's matrices has a
// positive entry wherever any step has an edge, so a strongly connected union makes the period
// product primitive and gossip converges (docs/graph.md).
#include <cstdint>
#include <string>
#include <vector>

#include "lpdt/graph/schedule.h"
#include "lpdt/graph/topology.h"

namespace lpdt::graph {

class PeriodicSchedule final : public TopologySchedule {
 public:
  // Throws ConfigError when `steps` is empty, the node counts differ, or the union over the
  // period is not strongly connected. `label` defaults to `name`.
  PeriodicSchedule(std::string name, std::vector<Topology> steps, std::string label = "");

  const Topology& at(std::int64_t step) const override;
  std::int64_t period() const override { return static_cast<std::int64_t>(steps_.size()); }
  std::int64_t num_nodes() const override { return steps_.front().num_nodes(); }
  const std::string& name() const override { return name_; }
  const std::string& label() const override { return label_; }

  const std::vector<Topology>& steps() const { return steps_; }

 private:
  std::string name_;
  std::string label_;
  std::vector<Topology> steps_;
};

}  // namespace lpdt::graph
