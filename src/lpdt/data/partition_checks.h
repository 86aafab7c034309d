#pragma once
// Argument checks shared by the partitioners (internal to the data module).
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lpdt::data::detail {

// labels as a vector; ConfigError unless [N] int64 with N > 0 and every label in [0, 2^24).
std::vector<int64_t> checked_labels(const torch::Tensor& labels, const std::string& who);

// ConfigError unless 1 <= num_nodes <= num_samples.
void check_num_nodes(int64_t num_nodes, int64_t num_samples, const std::string& who);

// Per-class counts of non-negative labels, size max(label) + 1.
std::vector<int64_t> count_classes(const std::vector<int64_t>& labels);

// Indices grouped by class in ascending index order (a stable argsort by label).
std::vector<int64_t> stable_class_order(const std::vector<int64_t>& labels);

}  // namespace lpdt::data::detail
