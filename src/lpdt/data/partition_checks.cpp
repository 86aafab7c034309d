#include "lpdt/data/partition_checks.h"

#include <torch/types.h>

#include "lpdt/core/error.h"

namespace lpdt::data::detail {
namespace {
// Class ids index per-class tables: a corrupt label must not turn into a huge allocation.
constexpr int64_t kMaxClasses = int64_t{1} << 24;
}  // namespace

std::vector<int64_t> checked_labels(const torch::Tensor& labels, const std::string& who) {
  if (!labels.defined() || labels.dim() != 1 || labels.scalar_type() != torch::kInt64) {
    throw ConfigError(who + ": labels must be a [N] int64 tensor");
  }
  if (labels.numel() == 0) throw ConfigError(who + ": no samples to partition");
  const auto contiguous = labels.contiguous();
  const int64_t* p = contiguous.data_ptr<int64_t>();
  std::vector<int64_t> out(p, p + contiguous.numel());
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] < 0 || out[i] >= kMaxClasses) {
      throw ConfigError(who + ": label " + std::to_string(out[i]) + " at index " +
                        std::to_string(i) + " is not a class id in [0, " +
                        std::to_string(kMaxClasses) + ")");
    }
  }
  return out;
}

void check_num_nodes(int64_t num_nodes, int64_t num_samples, const std::string& who) {
  if (num_nodes < 1) {
    throw ConfigError(who + ": number of nodes must be >= 1, got " + std::to_string(num_nodes));
  }
  if (num_nodes > num_samples) {
    throw ConfigError(who + ": " + std::to_string(num_nodes) + " nodes (graph.nodes) but only " +
                      std::to_string(num_samples) +
                      " training samples to share among them, at least one each: lower "
                      "graph.nodes or use a larger dataset");
  }
}

std::vector<int64_t> count_classes(const std::vector<int64_t>& labels) {
  std::vector<int64_t> counts;
  for (int64_t label : labels) {
    if (label >= static_cast<int64_t>(counts.size())) counts.resize(label + 1, 0);
    ++counts[label];
  }
  return counts;
}

std::vector<int64_t> stable_class_order(const std::vector<int64_t>& labels) {
  const auto counts = count_classes(labels);
  std::vector<int64_t> start(counts.size() + 1, 0);
  for (std::size_t c = 0; c < counts.size(); ++c) start[c + 1] = start[c] + counts[c];
  std::vector<int64_t> order(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i)
    order[start[labels[i]]++] = static_cast<int64_t>(i);
  return order;
}

}  // namespace lpdt::data::detail
