#pragma once
// Which nodes a multi-process run computes in a pass of their own where the in-process simulator
// groups them with others, or the reverse.
//
// Why it matters: a pass of one node runs the non-grouped convolution kernels, a pass of several
// the grouped ones, and the two sum a node's products in different orders (on AVX-512 CPUs too;
// between group counts of 2 and more the order is the same there). A rank's passes are chunks of
// its own block of nodes, the simulator's chunks of all nodes, so a rank that holds one node (or
// ends its block with a lone node) computes that node alone where the simulator does not: the run
// then differs from the simulator's in the last bits of float sums (docs/mpi.md).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lpdt::dist {

// Whether node `node` of [first, first + count) is alone in its pass when that block is cut into
// consecutive passes of `nodes_per_pass` (the last one shorter).
bool alone_in_pass(std::int64_t node, std::int64_t first, std::int64_t count,
                   std::int64_t nodes_per_pass);

// The nodes (increasing) alone in their pass under `ranks` ranks but not in one process, or in one
// process but not under the ranks. pass_size(k): the pass size for a process holding k nodes (the
// automatic size depends on k). Empty for one rank.
std::vector<std::int64_t> nodes_passed_alone_differently(
    std::int64_t total, int ranks, const std::function<std::int64_t(std::int64_t)>& pass_size);

// The note a run prints for `nodes` (non-empty, from nodes_passed_alone_differently): what differs
// and the settings that make the run bit-identical to the simulator.
std::string lone_node_pass_note(const std::vector<std::int64_t>& nodes,
                                std::int64_t one_process_pass);

}  // namespace lpdt::dist
