#pragma once
// Which rank hosts which nodes in a multi-process run: contiguous blocks, the first
// (total % ranks) ranks one node more, so that rank r's rows are global nodes first .. first +
// count - 1 (core/node_range.h) and every rank can compute every node's owner.
#include <cstdint>

#include "lpdt/core/node_range.h"

namespace lpdt::dist {

// The nodes of `rank` among `ranks`; ConfigError when there are fewer nodes than ranks.
NodeRange hosted_nodes(int rank, int ranks, std::int64_t total);
// The rank hosting global node `node`.
int owner_rank(std::int64_t node, int ranks, std::int64_t total);

}  // namespace lpdt::dist
