#include "lpdt/data/skew_partition.h"

#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "lpdt/core/error.h"
#include "lpdt/core/rng.h"
#include "lpdt/data/numpy_argsort.h"
#include "lpdt/data/partition_checks.h"
#include "lpdt/data/python_random.h"

namespace lpdt::data {
namespace {

// Python's int() on a non-negative double: truncation toward zero.
int64_t py_int(double x) { return static_cast<int64_t>(x); }

// Python's seq[begin:end] for 0 <= begin, end: clipped to the sequence, empty when begin >= end.
void append_slice(const std::vector<int64_t>& seq, int64_t begin, int64_t end,
                  std::vector<int64_t>& out) {
  const auto size = static_cast<int64_t>(seq.size());
  begin = std::min(begin, size);
  end = std::min(end, size);
  if (begin < end) out.insert(out.end(), seq.begin() + begin, seq.begin() + end);
}

}  // namespace

SkewNodeSizes skew_node_sizes(int64_t num_samples, int64_t num_nodes, double skew) {
  const double frac = 1.0 / static_cast<double>(num_nodes);
  const double n = static_cast<double>(num_samples);
  SkewNodeSizes sizes;
  if (skew == 1.0) {
    sizes.sorted = py_int(frac * n);
  } else if (skew == 0.0) {
    sizes.random = py_int(frac * n);
  } else {
    // (frac * N) * skew, exactly the reference's evaluation order (spec 8.2: n=4, skew 0.8,
    // N=50000 gives 10000 + int(2499.9999999999995) = 12499).
    sizes.sorted = py_int(frac * n * skew);
    sizes.random = py_int(frac * n * (1.0 - skew));
  }
  return sizes;
}

Partition partition_skew(const torch::Tensor& labels, int64_t num_nodes, double skew,
                         std::uint64_t seed, const std::vector<int64_t>& class_sizes,
                         SkewMode mode) {
  const std::string who = "skew partition";
  if (!(skew >= 0.0 && skew <= 1.0)) {
    throw ConfigError(who + ": skew must be in [0, 1], got " + std::to_string(skew));
  }
  const std::vector<int64_t> y = detail::checked_labels(labels, who);
  const auto n_samples = static_cast<int64_t>(y.size());
  detail::check_num_nodes(num_nodes, n_samples, who);
  const std::vector<int64_t> counts = detail::count_classes(y);

  std::vector<int64_t> sizes = counts;
  if (!class_sizes.empty()) {
    for (std::size_t c = 0; c < class_sizes.size(); ++c) {
      if (class_sizes[c] < 0) {
        throw ConfigError(who + ": class_sizes[" + std::to_string(c) + "] is negative (" +
                          std::to_string(class_sizes[c]) + ")");
      }
    }
    if (mode == SkewMode::kLpdt) {
      std::vector<int64_t> padded = counts;
      padded.resize(std::max(counts.size(), class_sizes.size()), 0);
      std::vector<int64_t> given = class_sizes;
      given.resize(padded.size(), 0);
      if (given != padded) {
        throw ConfigError(who +
                          ": class_sizes differ from the class counts of the labels; lpdt "
                          "mode takes them from the data (leave them empty), only the "
                          "reference mode accepts a hard-coded table");
      }
    }
    sizes = class_sizes;
  }

  const SkewNodeSizes per_node = skew_node_sizes(n_samples, num_nodes, skew);
  if (per_node.sorted + per_node.random == 0) {
    throw ConfigError(who + ": with " + std::to_string(n_samples) + " samples, " +
                      std::to_string(num_nodes) + " nodes and skew " + std::to_string(skew) +
                      " every node would get 0 samples");
  }

  // Spec 8.2 step 1: sort the sample indices by label.
  const std::vector<int64_t> order =
      mode == SkewMode::kReference ? numpy_argsort(y) : detail::stable_class_order(y);

  // Steps 2-3: chunk c = the next class_sizes[c] entries of `order`; its first
  // int(skew * class_sizes[c]) go to the sorted pool S, the rest to the random pool R. Python
  // slices clip at the end of the list, and so do we (only matters for a wrong size table).
  std::vector<int64_t> sorted_pool, random_pool;
  int64_t pos = 0;
  for (int64_t size : sizes) {
    std::vector<int64_t> chunk;
    append_slice(order, pos, pos + size, chunk);
    pos += size;
    const int64_t cut = py_int(skew * static_cast<double>(size));
    append_slice(chunk, 0, cut, sorted_pool);
    append_slice(chunk, cut, static_cast<int64_t>(chunk.size()), random_pool);
  }

  // Step 4: shuffle R.
  if (mode == SkewMode::kReference) {
    PythonRandom(seed).shuffle(random_pool);
  } else {
    Rng rng = Rng::stream(seed, 0, StreamPurpose::kPartition);
    lpdt::shuffle(random_pool.begin(), random_pool.end(), rng);
  }

  // Step 5: nodes take consecutive blocks of S then of R; leftovers stay unused.
  Partition partition;
  partition.node_indices.resize(num_nodes);
  int64_t s_pos = 0, r_pos = 0;
  for (int64_t k = 0; k < num_nodes; ++k) {
    auto& node = partition.node_indices[k];
    append_slice(sorted_pool, s_pos, s_pos + per_node.sorted, node);
    append_slice(random_pool, r_pos, r_pos + per_node.random, node);
    s_pos += per_node.sorted;
    r_pos += per_node.random;
    if (node.empty()) {
      throw ConfigError(
          who + ": node " + std::to_string(k) + " of " + std::to_string(num_nodes) +
          " gets no sample: " +
          (class_sizes.empty()
               ? "with " + std::to_string(n_samples) + " samples and skew " +
                     (std::ostringstream() << skew).str() +
                     " the per-class rounding leaves too few for every node; use fewer nodes "
                     "or more data"
               : std::string("the class_sizes table is smaller than the data")));
    }
  }
  return partition;
}

}  // namespace lpdt::data
