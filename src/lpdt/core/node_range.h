#pragma once
// The nodes one process hosts: a contiguous block [first, first + count) of the run's `total`
// nodes. The simulator hosts them all; a rank of a multi-process (MPI) run hosts one block
// (dist/placement.h). Every node-batched buffer of the process has `count` rows, row r being
// global node first + r, so that a node's random streams, data and messages do not depend on
// where it runs.
#include <cstdint>

namespace lpdt {

struct NodeRange {
  std::int64_t first = 0;
  std::int64_t count = 0;
  std::int64_t total = 0;

  // Every node of the run in one process (the simulator).
  static NodeRange all(std::int64_t total) { return NodeRange{0, total, total}; }
  bool is_all() const { return first == 0 && count == total; }
  bool contains(std::int64_t node) const { return node >= first && node < first + count; }
  std::int64_t end() const { return first + count; }
};

}  // namespace lpdt
