#include "lpdt/dist/lone_node_passes.h"

#include <algorithm>
#include <string>

#include "lpdt/dist/placement.h"

namespace lpdt::dist {

bool alone_in_pass(std::int64_t node, std::int64_t first, std::int64_t count,
                   std::int64_t nodes_per_pass) {
  const std::int64_t pass = std::max<std::int64_t>(1, std::min(nodes_per_pass, count));
  const std::int64_t position = node - first;
  const std::int64_t pass_start = position / pass * pass;
  return std::min(pass, count - pass_start) == 1;
}

std::vector<std::int64_t> nodes_passed_alone_differently(
    std::int64_t total, int ranks, const std::function<std::int64_t(std::int64_t)>& pass_size) {
  std::vector<std::int64_t> nodes;
  if (ranks <= 1) return nodes;
  const std::int64_t one_process_pass = pass_size(total);
  for (int r = 0; r < ranks; ++r) {
    const NodeRange block = hosted_nodes(r, ranks, total);
    const std::int64_t rank_pass = pass_size(block.count);
    for (std::int64_t node = block.first; node < block.end(); ++node) {
      if (alone_in_pass(node, block.first, block.count, rank_pass) !=
          alone_in_pass(node, 0, total, one_process_pass)) {
        nodes.push_back(node);
      }
    }
  }
  return nodes;
}

std::string lone_node_pass_note(const std::vector<std::int64_t>& nodes,
                                std::int64_t one_process_pass) {
  constexpr std::size_t kNamed = 8;
  std::string list;
  for (std::size_t i = 0; i < nodes.size() && i < kNamed; ++i) {
    if (i > 0) list += ", ";
    list += std::to_string(nodes[i]);
  }
  if (nodes.size() > kNamed) list += ", ... (" + std::to_string(nodes.size()) + " nodes)";
  std::string note = "node";
  note += nodes.size() == 1 ? " " : "s ";
  note += list;
  note += ": computed in a pass of one node under this rank layout but not in one process (passes "
          "of ";
  note += std::to_string(one_process_pass);
  note += " there), or the reverse. A pass of one node runs the non-grouped convolution kernels, which "
          "sum in another order, so this run differs from the in-process simulator's in the last "
          "bits of float sums and what follows from them. For a run bit-identical to the "
          "simulator set run.nodes_per_pass = 1, or give every rank at least two nodes and no "
          "lone last node (docs/mpi.md)";
  return note;
}

}  // namespace lpdt::dist
