#include "lpdt/exp/settings_without_effect.h"

#include <sstream>
#include <type_traits>
#include <utility>

namespace lpdt::exp {
namespace {

// Adds "KEY = VALUE has no effect: WHY" where value differs from the default.
class Collector {
 public:
  template <typename T>
  void unless_default(const char* key, const T& value, const T& default_value,
                      const std::string& why) {
    if (value == default_value) return;
    std::ostringstream line;
    line << key << " = " << shown(value) << " has no effect: " << why;
    lines_.push_back(line.str());
  }
  std::vector<std::string> take() { return std::move(lines_); }

 private:
  template <typename T>
  static std::string shown(const T& value) {
    if constexpr (std::is_enum_v<T>) {
      return "\"" + std::string(to_string(value)) + "\"";
    } else if constexpr (std::is_same_v<T, std::string>) {
      return "\"" + value + "\"";
    } else if constexpr (std::is_same_v<T, bool>) {
      return value ? "true" : "false";
    } else {
      std::ostringstream out;
      out << value;
      return out.str();
    }
  }
  std::vector<std::string> lines_;
};

bool is_text(DataConfig::Dataset dataset) {
  return dataset == DataConfig::Dataset::kAgNews || dataset == DataConfig::Dataset::kSentlen ||
         dataset == DataConfig::Dataset::kSyntheticText;
}

}  // namespace

std::vector<std::string> settings_without_effect(const ExperimentConfig& c) {
  const ExperimentConfig d;  // the defaults
  Collector out;

  // The quantizers exist in 8-bit models only. (quant.range_evonorm and quant.range_momentum
  // also shape a float32 model's Range EvoNorm / Range BatchNorm: not listed.)
  if (c.model.precision != ModelConfig::Precision::kInt8) {
    const std::string why = "model.precision = \"" + std::string(to_string(c.model.precision)) +
                            "\" has no quantizers (the [quant] keys apply to int8 models)";
    out.unless_default("quant.backend", c.quant.backend, d.quant.backend, why);
    out.unless_default("quant.scheme", c.quant.scheme, d.quant.scheme, why);
    out.unless_default("quant.bits", c.quant.bits, d.quant.bits, why);
    out.unless_default("quant.grad_bits", c.quant.grad_bits, d.quant.grad_bits, why);
    out.unless_default("quant.weight_grad", c.quant.weight_grad, d.quant.weight_grad, why);
    out.unless_default("quant.eval_rounding", c.quant.eval_rounding, d.quant.eval_rounding, why);
    out.unless_default("quant.range_state", c.quant.range_state, d.quant.range_state, why);
  }

  // Momentum and Nesterov are SGD's; beta1, beta2 and eps Adam's.
  const std::string optimizer = "optim.optimizer = \"" +
                                std::string(to_string(c.optim.optimizer)) + "\"";
  if (c.optim.optimizer != OptimConfig::Optimizer::kSgd) {
    const std::string why = optimizer + " keeps its own moments (optim.beta1, optim.beta2)";
    out.unless_default("optim.momentum", c.optim.momentum, d.optim.momentum, why);
    out.unless_default("optim.nesterov", c.optim.nesterov, d.optim.nesterov, why);
  } else {
    const std::string why = optimizer + " has no Adam moments (optim.momentum is its own)";
    out.unless_default("optim.beta1", c.optim.beta1, d.optim.beta1, why);
    out.unless_default("optim.beta2", c.optim.beta2, d.optim.beta2, why);
    out.unless_default("optim.eps", c.optim.eps, d.optim.eps, why);
  }

  // Each partition reads its own keys.
  const std::string partition =
      "data.partition = \"" + std::string(to_string(c.data.partition)) + "\"";
  if (c.data.partition != DataConfig::Partition::kSkew) {
    out.unless_default("data.skew", c.data.skew, d.data.skew, partition + " (skew only)");
    out.unless_default("data.skew_mode", c.data.skew_mode, d.data.skew_mode,
                       partition + " (skew only)");
  }
  if (c.data.partition != DataConfig::Partition::kDirichlet) {
    out.unless_default("data.dirichlet_alpha", c.data.dirichlet_alpha, d.data.dirichlet_alpha,
                       partition + " (dirichlet only)");
    out.unless_default("data.dirichlet_min_samples", c.data.dirichlet_min_samples,
                       d.data.dirichlet_min_samples, partition + " (dirichlet only)");
  }
  if (c.data.partition != DataConfig::Partition::kShards) {
    out.unless_default("data.shards_per_node", c.data.shards_per_node, d.data.shards_per_node,
                       partition + " (shards only)");
  }

  // Each topology reads its own shape keys.
  const std::string topology =
      "graph.topology = \"" + std::string(to_string(c.graph.topology)) + "\"";
  if (c.graph.topology != GraphConfig::Topology::kTorus) {
    out.unless_default("graph.torus_rows", c.graph.torus_rows, d.graph.torus_rows,
                       topology + " (torus only)");
  }
  if (c.graph.topology != GraphConfig::Topology::kRandom) {
    out.unless_default("graph.random_out_degree", c.graph.random_out_degree,
                       d.graph.random_out_degree, topology + " (random only)");
  }

  // Files, vocabularies and sequence lengths belong to some datasets only.
  const std::string dataset = "data.dataset = \"" + std::string(to_string(c.data.dataset)) + "\"";
  if (c.data.dataset == DataConfig::Dataset::kSynthetic ||
      c.data.dataset == DataConfig::Dataset::kSyntheticText) {
    out.unless_default("data.dir", c.data.dir, d.data.dir, dataset + " is generated, not read");
  }
  if (!is_text(c.data.dataset)) {
    out.unless_default("data.vocab", c.data.vocab, d.data.vocab,
                       dataset + " is an image dataset (data.vocab is for text)");
    out.unless_default("data.max_length", c.data.max_length, d.data.max_length,
                       dataset + " is an image dataset (data.max_length is for text)");
  }
  if (c.data.dataset != DataConfig::Dataset::kSynthetic &&
      c.data.dataset != DataConfig::Dataset::kSyntheticText) {
    out.unless_default("data.synthetic_samples_per_class", c.data.synthetic_samples_per_class,
                       d.data.synthetic_samples_per_class,
                       dataset + " (synthetic and synthetic-text only)");
  }
  if (c.data.dataset != DataConfig::Dataset::kSynthetic) {
    out.unless_default("data.synthetic_size", c.data.synthetic_size, d.data.synthetic_size,
                       dataset + " (synthetic only)");
  }
  return out.take();
}

}  // namespace lpdt::exp
