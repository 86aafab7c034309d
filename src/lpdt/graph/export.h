#pragma once
// Export of topologies: Graphviz DOT, JSON, and the human-readable text of `lpdt topo`
// (docs/graph.md shows examples).
//
// DOT: a `digraph`; an arc j -> i per edge labelled with W[i][j] (%.6g); an undirected link is
// drawn as its two arcs (their weights may differ, e.g. uniform mixing on an irregular graph);
// self weights W[i][i] are in the node labels, not drawn as loops.
// JSON: name, label, mixing, num_nodes, period, flags, spectral gap (spectral.h), per-node degrees
// and neighbours, edges {src, dst, weight = W[dst][src]} and the full mixing matrix (row i =
// weights node i gives); numbers printed with 17 significant digits, so they round-trip.
// A time-varying schedule gives the union (DOT, arcs labelled with their step), or one object per
// step plus the spectral gap of the period product (JSON, text).
#include <string>

#include "lpdt/graph/spectral.h"

namespace lpdt::graph {

class Topology;
class TopologySchedule;

std::string to_dot(const Topology& topology);
std::string to_dot(const TopologySchedule& schedule);

std::string to_json(const Topology& topology);
std::string to_json(const TopologySchedule& schedule);
// The same with the schedule's spectral_info (of its period product; of W for a static one)
// given by a caller that has it already: for a graph that is not circulant it is an n^3
// decomposition (2.7 s for a 1,024-node random graph on a 2-core CPU), which a run needs once.
std::string to_json(const TopologySchedule& schedule, const SpectralInfo& spectral);

// Name, node count, edges, in/out degree and neighbours per node, the mixing matrix (printed
// compactly when n <= kDescribeMatrixMaxNodes) and the spectral gap.
inline constexpr int kDescribeMatrixMaxNodes = 16;
std::string describe(const Topology& topology);
std::string describe(const TopologySchedule& schedule);

}  // namespace lpdt::graph
