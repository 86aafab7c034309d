#include "lpdt/data/partition.h"

#include <torch/types.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "lpdt/core/error.h"
#include "lpdt/core/json_error_text.h"

namespace lpdt::data {
namespace {

void check_labels(const torch::Tensor& labels, int64_t num_classes, const char* who) {
  LPDT_CHECK(labels.defined() && labels.dim() == 1 && labels.scalar_type() == torch::kInt64,
             std::string(who) + ": labels must be [N] int64");
  LPDT_CHECK(num_classes > 0, std::string(who) + ": num_classes must be positive");
}

std::ofstream open_for_writing(const std::string& path, const char* what) {
  std::ofstream out(path);
  if (!out) throw UserError(std::string(what) + ": " + path + ": cannot open for writing");
  return out;
}

}  // namespace

int64_t Partition::num_assigned() const {
  int64_t total = 0;
  for (const auto& node : node_indices) total += static_cast<int64_t>(node.size());
  return total;
}

void validate_partition(const Partition& partition, int64_t num_samples, const std::string& what) {
  std::vector<int32_t> owner(static_cast<std::size_t>(std::max<int64_t>(num_samples, 0)), -1);
  for (int64_t k = 0; k < partition.num_nodes(); ++k) {
    for (int64_t index : partition.node_indices[k]) {
      if (index < 0 || index >= num_samples) {
        throw UserError(what + ": node " + std::to_string(k) + " has sample index " +
                        std::to_string(index) + ", outside [0, " + std::to_string(num_samples) +
                        ")");
      }
      if (owner[index] >= 0) {
        throw UserError(what + ": sample " + std::to_string(index) + " is given to node " +
                        std::to_string(owner[index]) + " and again to node " + std::to_string(k));
      }
      owner[index] = static_cast<int32_t>(k);
    }
  }
}

torch::Tensor class_histogram(const Partition& partition, const torch::Tensor& labels,
                              int64_t num_classes) {
  check_labels(labels, num_classes, "class_histogram");
  const auto contiguous = labels.contiguous();
  const int64_t* label = contiguous.data_ptr<int64_t>();
  const int64_t n_labels = contiguous.numel();
  auto histogram = torch::zeros({partition.num_nodes(), num_classes}, torch::kInt64);
  auto* h = histogram.data_ptr<int64_t>();
  for (int64_t k = 0; k < partition.num_nodes(); ++k) {
    for (int64_t index : partition.node_indices[k]) {
      LPDT_CHECK(index >= 0 && index < n_labels, "class_histogram: index out of range");
      const int64_t c = label[index];
      LPDT_CHECK(c >= 0 && c < num_classes, "class_histogram: label out of range");
      ++h[k * num_classes + c];
    }
  }
  return histogram;
}

void write_partition_json(const std::string& path, const Partition& partition,
                          const torch::Tensor& labels, int64_t num_classes) {
  const auto histogram = class_histogram(partition, labels, num_classes);
  nlohmann::json j;
  j["num_nodes"] = partition.num_nodes();
  j["num_classes"] = num_classes;
  j["num_samples"] = labels.size(0);
  j["num_assigned"] = partition.num_assigned();
  j["partitions"] = partition.node_indices;
  auto counts = nlohmann::json::array();
  const auto* h = histogram.data_ptr<int64_t>();
  for (int64_t k = 0; k < partition.num_nodes(); ++k) {
    counts.push_back(std::vector<int64_t>(h + k * num_classes, h + (k + 1) * num_classes));
  }
  j["class_counts"] = std::move(counts);
  auto out = open_for_writing(path, "partition");
  out << j.dump() << "\n";
  if (!out) throw UserError(std::string("partition: ") + path + ": write failed");
}

Partition read_partition_json(const std::string& path, int64_t num_samples) {
  std::ifstream in(path);
  if (!in) throw UserError("partition: " + path + ": cannot open");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw UserError("partition: " + path + ": not valid JSON (" + json_error_text(e) + ")");
  }
  if (!j.is_object() || !j.contains("partitions") || !j["partitions"].is_array()) {
    throw UserError("partition: " + path + ": expected an object with a \"partitions\" array");
  }
  Partition p;
  for (const auto& node : j["partitions"]) {
    if (!node.is_array()) {
      throw UserError("partition: " + path + ": every entry of \"partitions\" must be a list");
    }
    std::vector<int64_t> indices;
    indices.reserve(node.size());
    for (const auto& v : node) {
      if (!v.is_number_integer()) {
        throw UserError("partition: " + path + ": sample indices must be integers, got " +
                        v.dump());
      }
      indices.push_back(v.get<int64_t>());
    }
    p.node_indices.push_back(std::move(indices));
  }
  if (p.node_indices.empty()) throw UserError("partition: " + path + ": no nodes");
  validate_partition(p, num_samples, "partition: " + path);
  return p;
}

void write_class_histogram_csv(const std::string& path, const Partition& partition,
                               const torch::Tensor& labels, int64_t num_classes) {
  const auto histogram = class_histogram(partition, labels, num_classes);
  auto out = open_for_writing(path, "class histogram");
  out << "node";
  for (int64_t c = 0; c < num_classes; ++c) out << ",class_" << c;
  out << "\n";
  const auto* h = histogram.data_ptr<int64_t>();
  for (int64_t k = 0; k < partition.num_nodes(); ++k) {
    out << k;
    for (int64_t c = 0; c < num_classes; ++c) out << "," << h[k * num_classes + c];
    out << "\n";
  }
  if (!out) throw UserError("class histogram: " + path + ": write failed");
}

}  // namespace lpdt::data
