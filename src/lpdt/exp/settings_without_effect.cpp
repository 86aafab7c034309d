#include "lpdt/exp/settings_without_effect.h"

#include <sstream>
#include <type_traits>
#include <utility>
#include <vector>

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
      std::string quoted = "\"";
      quoted.append(to_string(value));
      quoted.push_back('"');
      return quoted;
    } else if constexpr (std::is_same_v<T, std::string>) {
      return "\"" + value + "\"";
    } else if constexpr (std::is_same_v<T, bool>) {
      return value ? "true" : "false";
    } else if constexpr (std::is_same_v<T, std::vector<int>>) {
      std::string list;
      for (const int v : value) list += (list.empty() ? "" : ", ") + std::to_string(v);
      return "[" + list + "]";
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
  // The schedule's own keys.
  if (c.optim.schedule != OptimConfig::Schedule::kMultistep) {
    const std::string why = "optim.schedule = \"" + std::string(to_string(c.optim.schedule)) +
                            "\" (optim.milestones and optim.gamma are multistep's)";
    out.unless_default("optim.milestones", c.optim.milestones, d.optim.milestones, why);
    out.unless_default("optim.gamma", c.optim.gamma, d.optim.gamma, why);
  }
  // QGM's beta is optim.momentum: at 0 its direction is the plain gradient.
  if (c.optim.optimizer == OptimConfig::Optimizer::kSgd && c.optim.momentum == 0) {
    out.unless_default("algo.qgm", c.algo.qgm, d.algo.qgm,
                       "its momentum is optim.momentum = 0, so its steps are plain SGD's (set "
                       "optim.momentum in (0, 1))");
  }
  // A compressor that keeps every entry sends what no compressor sends.
  if (c.algo.keep_fraction >= 1) {
    out.unless_default("algo.compressor", c.algo.compressor, d.algo.compressor,
                       "algo.keep_fraction = 1 keeps every entry, so the messages are the "
                       "uncompressed ones (set algo.keep_fraction below 1)");
  }
  if (c.algo.message_values != AlgoConfig::MessageValues::kInt8) {
    out.unless_default("algo.message_rounding", c.algo.message_rounding,
                       d.algo.message_rounding,
                       "algo.message_values = \"" +
                           std::string(to_string(c.algo.message_values)) +
                           "\" (it rounds int8 message values only)");
  }

  // Injected faults: each key acts with its partner.
  if (c.faults.delay_probability == 0) {
    out.unless_default("faults.delay_rounds", c.faults.delay_rounds, d.faults.delay_rounds,
                       "faults.delay_probability = 0 delays no message");
  }
  if (c.faults.kill_nodes.empty()) {
    out.unless_default("faults.kill_step", c.faults.kill_step, d.faults.kill_step,
                       "faults.kill_nodes is empty: no node dies");
  }

  // Augmentation and model keys of some models only.
  if (!c.data.augment) {
    out.unless_default("data.crop_padding", c.data.crop_padding, d.data.crop_padding,
                       "data.augment = false (the padding is for its random crops)");
  }
  using Arch = ModelConfig::Arch;
  const bool transformer = c.model.arch == Arch::kTransformer || c.model.arch == Arch::kDistilbert;
  const std::string arch = "model.arch = \"" + std::string(to_string(c.model.arch)) + "\"";
  if (!transformer) {
    const std::string why = arch + " (transformers only)";
    out.unless_default("model.dropout", c.model.dropout, d.model.dropout, why);
  }
  if (c.model.arch != Arch::kTransformer) {
    const std::string why = arch + " (model.arch = \"transformer\" only)";
    out.unless_default("model.transformer_hidden", c.model.transformer_hidden,
                       d.model.transformer_hidden, why);
    out.unless_default("model.transformer_layers", c.model.transformer_layers,
                       d.model.transformer_layers, why);
    out.unless_default("model.transformer_heads", c.model.transformer_heads,
                       d.model.transformer_heads, why);
    out.unless_default("model.transformer_ffn", c.model.transformer_ffn,
                       d.model.transformer_ffn, why);
  }
  const bool has_norms = c.model.arch == Arch::kResnet || c.model.arch == Arch::kResnet18 ||
                         c.model.arch == Arch::kResnet34 || c.model.arch == Arch::kMobilenetv2 ||
                         c.model.arch == Arch::kVgg11;
  const bool grouped_norm = c.model.norm == ModelConfig::Norm::kEvonorm ||
                            c.model.norm == ModelConfig::Norm::kGroupnorm ||
                            c.model.norm == ModelConfig::Norm::kRangeEvonorm;
  if (!has_norms || !grouped_norm) {
    out.unless_default("model.groups", c.model.groups, d.model.groups,
                       has_norms ? "model.norm = \"" + std::string(to_string(c.model.norm)) +
                                       "\" has no channel groups (evonorm, groupnorm and "
                                       "rangeevonorm have)"
                                 : arch + " has no normalisation layers with channel groups");
  }
  if (c.model.arch != Arch::kResnet) {
    out.unless_default("model.depth", c.model.depth, d.model.depth,
                       arch + " (the CIFAR ResNet's depth; resnet18/34 name theirs)");
  }
  if (c.algo.name != AlgoConfig::Name::kChoco) {
    out.unless_default("algo.choco_init", c.algo.choco_init, d.algo.choco_init,
                       "algo.name = \"" + std::string(to_string(c.algo.name)) +
                           "\" keeps no public copies (choco only)");
  }
  if (c.eval.protocol != EvalConfig::Protocol::kReference) {
    out.unless_default("eval.gossip_rounds", c.eval.gossip_rounds, d.eval.gossip_rounds,
                       "eval.protocol = \"" + std::string(to_string(c.eval.protocol)) +
                           "\" runs no gossip-only rounds (reference only)");
  }
  const bool residual = c.model.arch == Arch::kResnet || c.model.arch == Arch::kResnet18 ||
                        c.model.arch == Arch::kResnet34 || c.model.arch == Arch::kMobilenetv2;
  if (!residual) {
    out.unless_default("model.residual_init", c.model.residual_init, d.model.residual_init,
                       arch + " has no residual branches (resnet, resnet18/34 and mobilenetv2 "
                              "have)");
  } else if (c.model.norm == ModelConfig::Norm::kNone) {
    out.unless_default("model.residual_init", c.model.residual_init, d.model.residual_init,
                       "model.norm = \"none\" leaves the residual branches without the norm "
                       "whose gamma it sets");
  }
  // Range EvoNorm: model.norm = rangeevonorm, or evonorm in an 8-bit model.
  const bool range_evonorm =
      has_norms && (c.model.norm == ModelConfig::Norm::kRangeEvonorm ||
                    (c.model.norm == ModelConfig::Norm::kEvonorm &&
                     c.model.precision == ModelConfig::Precision::kInt8));
  if (!range_evonorm && c.model.precision == ModelConfig::Precision::kInt8) {
    out.unless_default("quant.range_evonorm", c.quant.range_evonorm, d.quant.range_evonorm,
                       "the model has no Range EvoNorm (model.norm = \"evonorm\" or "
                       "\"rangeevonorm\" on a model with normalisation layers)");
  }
  return out.take();
}

}  // namespace lpdt::exp
