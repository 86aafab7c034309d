#include "lpdt/dist/placement.h"

#include <algorithm>
#include <string>

#include "lpdt/core/error.h"

namespace lpdt::dist {

NodeRange hosted_nodes(int rank, int ranks, std::int64_t total) {
  if (ranks < 1 || total < ranks) {
    throw ConfigError("graph.nodes = " + std::to_string(total) + " cannot be spread over " +
                      std::to_string(ranks) +
                      " processes: every process hosts at least one node (run fewer processes, "
                      "mpirun -np <= graph.nodes)");
  }
  LPDT_CHECK(rank >= 0 && rank < ranks, "hosted_nodes: rank out of range");
  const std::int64_t base = total / ranks, extra = total % ranks;
  NodeRange r;
  r.first = rank * base + std::min<std::int64_t>(rank, extra);
  r.count = base + (rank < extra ? 1 : 0);
  r.total = total;
  return r;
}

int owner_rank(std::int64_t node, int ranks, std::int64_t total) {
  LPDT_CHECK(node >= 0 && node < total && ranks >= 1 && total >= ranks,
             "owner_rank: node out of range");
  const std::int64_t base = total / ranks, extra = total % ranks;
  const std::int64_t big = extra * (base + 1);  // nodes of the ranks hosting base + 1
  if (node < big) return static_cast<int>(node / (base + 1));
  return static_cast<int>(extra + (node - big) / base);
}

}  // namespace lpdt::dist
