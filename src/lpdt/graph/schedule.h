#pragma once
// A topology schedule: the graph that gossip step t runs on (docs/graph.md).
//
// BlueFog style: a time-varying topology is a generator of per-step graphs. A static `Topology`
// is itself a schedule of period 1 that returns itself for every step, so code that gossips only
// ever asks `schedule.at(step)`.
#include <cstdint>
#include <string>

namespace lpdt::graph {

// The most nodes a topology may have: its mixing matrix is dense (n^2 doubles) and its spectral
// gap a dense n^3 eigendecomposition (about a minute at 3,000 nodes on a 2-core CPU), so a larger
// graph would run for hours or exhaust memory before training started.
constexpr std::int64_t kMaxNodes = 4096;

class Topology;

class TopologySchedule {
 public:
  virtual ~TopologySchedule() = default;

  // The graph (and mixing matrix) of gossip step `step` >= 0. The reference stays valid for the
  // lifetime of the schedule. Throws lpdt::UserError for a negative step.
  virtual const Topology& at(std::int64_t step) const = 0;

  // Number of steps after which the sequence of graphs repeats: 1 for a static topology.
  virtual std::int64_t period() const = 0;

  // Number of nodes; the same at every step.
  virtual std::int64_t num_nodes() const = 0;

  // Canonical name as accepted by make_topology ("torus", "one-peer-exponential", ...), or the
  // name a user gave a custom graph.
  virtual const std::string& name() const = 0;

  // Human-readable name with the parameters ("torus 4x4", "random (out-degree 2, seed 7)").
  virtual const std::string& label() const = 0;

  bool is_static() const { return period() == 1; }

 protected:
  // Copyable only through a concrete type, so a schedule is never sliced.
  TopologySchedule() = default;
  TopologySchedule(const TopologySchedule&) = default;
  TopologySchedule(TopologySchedule&&) = default;
  TopologySchedule& operator=(const TopologySchedule&) = default;
  TopologySchedule& operator=(TopologySchedule&&) = default;
};

}  // namespace lpdt::graph
