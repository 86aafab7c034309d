#pragma once
// The configuration of one experiment (docs/config.md): its schema, and the typed struct that the
// rest of lpdt reads. One TOML file per experiment; every key can be overridden on the command
// line with `--set section.key=value`; the resolved configuration is written to the run folder
// (config.toml) and into summary.json.
//
// The defaults live in the member initialisers below and nowhere else: the schema reads them
// from a default-constructed ExperimentConfig. Plain fields only (no torch).
#include <array>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lpdt/exp/config_schema.h"

namespace lpdt {

// Image sides (data.pad_to, crop_size, image_size, synthetic_size, bench --size) beyond this are
// typos: a batch of 32 such RGB images already takes 6 GiB in float32, and larger sides overflow
// sizes.
inline constexpr std::int64_t kLargestImageSide = 4096;

// [run]
struct RunConfig {
  enum class Device { kCpu, kCuda };
  enum class CudaGraph { kAuto, kOff };

  std::string name = "quickstart";
  std::string out_dir = "runs";
  std::uint64_t seed = 1234;
  Device device = Device::kCpu;
  int threads = 0;  // 0 = all cores
  int epochs = 15;
  int eval_every = 1;           // epochs
  int checkpoint_every = 1;     // epochs; 0 = no checkpoints
  int log_every = 50;           // steps; 0 = per-epoch logs only
  int max_steps_per_epoch = 0;  // 0 = the full epoch
  int nodes_per_pass = 0;       // 0 = automatic (models::automatic_nodes_per_pass)
  int pass_workers = 0;         // 0 = automatic (models::automatic_pass_workers)
  CudaGraph cuda_graph = CudaGraph::kAuto;
  double receive_timeout_s = 600;  // multi-process runs: the deadline of every wait for a peer

  bool operator==(const RunConfig&) const = default;
};

// [data]
struct DataConfig {
  enum class Dataset { kFashionMnist, kMnist, kCifar10, kCifar100, kSynthetic, kImagenette,
                       kAgNews, kSentlen, kSyntheticText };
  enum class Partition { kSkew, kDirichlet, kShards, kIid };
  enum class SkewMode { kLpdt, kReference };
  enum class OnDevice { kAuto, kOn, kOff };

  Dataset dataset = Dataset::kFashionMnist;
  std::string dir;  // "" = the dataset's default location
  Partition partition = Partition::kSkew;
  double skew = 0.8;
  SkewMode skew_mode = SkewMode::kLpdt;
  double dirichlet_alpha = 0.5;
  int dirichlet_min_samples = 10;  // every node's least share; a draw short of it is redrawn
  int shards_per_node = 2;
  int batch_size = 32;  // per node
  bool augment = true;
  int crop_padding = 4;
  int pad_to = 0;  // 0 = no padding
  int eval_batch_size = 500;
  int test_subset = 0;  // 0 = the full test set
  int synthetic_samples_per_class = 200;
  int synthetic_size = 16;
  // Image folders (docs/data.md, "Imagenette").
  int image_size = 0;  // stored side S; 0 = the dataset's own (imagenette: 160)
  int crop_size = 0;   // random-resized-crop side in training, centre crop in evaluation; 0 = off
  // Where training batches are made (data::LoaderOptions::batches_on).
  OnDevice on_device = OnDevice::kAuto;
  // Text datasets (docs/data.md, "Text datasets").
  std::string vocab;    // WordPiece vocab.txt; "" = synthetic-text's own vocabulary
  int max_length = 128;  // tokens per sequence, [CLS] and [SEP] included

  bool operator==(const DataConfig&) const = default;
};

// [model]
// The most CPU threads a run or benchmark may ask for (run.threads, bench --threads): beyond
// any machine's cores, OpenMP's set-up of that many threads takes minutes before any output.
inline constexpr std::int64_t kMaxThreads = 1024;

// DistilBERT-base's position table (models::TransformerOptions::distilbert_base(); a test ties
// the two): model.arch = "distilbert" reads at most this many tokens per sequence.
inline constexpr std::int64_t kDistilbertPositions = 512;

struct ModelConfig {
  enum class Arch { kResnet, kVgg11, kLenet5, kMlp, kResnet18, kResnet34, kMobilenetv2,
                    kDistilbert, kTransformer };
  enum class Norm { kEvonorm, kBatchnorm, kGroupnorm, kRangeEvonorm, kRangeBatchnorm, kNone };
  enum class Precision { kFp32, kBf16, kInt8 };
  enum class ResidualInit { kReference, kOne };

  Arch arch = Arch::kLenet5;   // the quickstart; configs/ has the paper's ResNet-20 runs
  int depth = 20;              // ResNet only
  Norm norm = Norm::kEvonorm;  // at int8, evonorm means Range EvoNorm (paper section 3)
  Precision precision = Precision::kFp32;
  // gamma of each residual branch's last norm at the start (nn::ResidualInit).
  ResidualInit residual_init = ResidualInit::kReference;
  int groups = 8;  // EvoNorm / GroupNorm groups
  // Transformer classifiers (arch distilbert / transformer; models/transformer.h).
  std::string pretrained;       // a Hugging Face model.safetensors; "" = random initialisation
  int transformer_hidden = 128;  // arch transformer only; distilbert is 768
  int transformer_layers = 2;    // 6
  int transformer_heads = 4;     // 12
  int transformer_ffn = 512;     // 3072
  double dropout = 0.1;          // both archs

  // ResNet blocks per stage, n = (depth - 2) / 6 truncated as the official code does: depth 20
  // gives 3; the paper's "ResNet-54" gives 8 (a 50-layer network, the same as depth 50).
  int resnet_blocks_per_stage() const { return (depth - 2) / 6; }

  bool operator==(const ModelConfig&) const = default;
};

// [quant]: how int8 models quantize (docs/quantization.md)
struct QuantConfig {
  enum class Backend { kSimulated, kInteger };
  enum class Scheme { kGemmlowp, kReference };
  enum class Rounding { kNearest, kStochastic };
  enum class RangeEvonorm { kReference, kPaper, kStd };
  enum class RangeState { kBuffer, kParam };
  enum class WeightGrad { kFp32, kBf16 };

  Backend backend = Backend::kSimulated;
  Scheme scheme = Scheme::kGemmlowp;
  int bits = 8;
  int grad_bits = 8;
  WeightGrad weight_grad = WeightGrad::kFp32;
  Rounding eval_rounding = Rounding::kNearest;
  double range_momentum = 0.9;
  RangeEvonorm range_evonorm = RangeEvonorm::kReference;
  RangeState range_state = RangeState::kBuffer;

  bool operator==(const QuantConfig&) const = default;
};

// [graph]
struct GraphConfig {
  enum class Topology {
    kDirectedRing,
    kRing,
    kTorus,
    kComplete,
    kExponential,
    kRandom,
    kOnePeerExponential
  };
  enum class Mixing { kUniform, kMetropolis };

  Topology topology = Topology::kDirectedRing;
  int nodes = 8;
  Mixing mixing = Mixing::kUniform;
  int torus_rows = 0;  // 0 = the most square factorisation of nodes
  int random_out_degree = 2;

  // Whether the topology's edges go one way (then Metropolis-Hastings weights do not apply).
  static bool is_directed(Topology topology);

  bool operator==(const GraphConfig&) const = default;
};

// [algo]
struct AlgoConfig {
  enum class Name { kDpsgd, kDeepSqueeze, kChoco };
  enum class Compressor { kNone, kTopK, kRandomK };
  enum class ChocoInit { kZero, kModel };
  enum class MessageValues { kFp32, kBf16, kInt8 };

  Name name = Name::kChoco;
  double consensus_step = 1.0;  // the paper's gamma, the official code's --eta
  Compressor compressor = Compressor::kNone;
  double keep_fraction = 1.0;  // the official --k is 1 - keep_fraction
  MessageValues message_values = MessageValues::kFp32;  // docs/wire.md
  QuantConfig::Rounding message_rounding = QuantConfig::Rounding::kStochastic;
  bool qgm = false;
  ChocoInit choco_init = ChocoInit::kZero;

  bool operator==(const AlgoConfig&) const = default;
};

// [optim]
struct OptimConfig {
  enum class Schedule { kConstant, kMultistep, kCosine };
  enum class Warmup { kOfficial, kNone };
  enum class Optimizer { kSgd, kAdam, kAdamW };

  double lr = 0.1;
  Optimizer optimizer = Optimizer::kSgd;  // algo/local_sgd.h, algo/local_adam.h
  double momentum = 0.9;
  bool nesterov = true;
  double weight_decay = 1e-4;
  double beta1 = 0.9;  // adam / adamw only (torch's defaults)
  double beta2 = 0.999;
  double eps = 1e-8;
  Schedule schedule = Schedule::kCosine;
  std::vector<int> milestones = {100, 150};  // epochs
  double gamma = 0.1;
  Warmup warmup = Warmup::kNone;

  bool operator==(const OptimConfig&) const = default;
};

// [eval]
struct EvalConfig {
  enum class Protocol { kAverage, kReference };

  Protocol protocol = Protocol::kAverage;
  int gossip_rounds = 50;  // protocol reference only (the official code's 50, spec 5.4)
  bool per_node = true;

  bool operator==(const EvalConfig&) const = default;
};

// [ledger]
struct LedgerConfig {
  enum class Accounting { kLpdt, kReference };

  Accounting accounting = Accounting::kLpdt;

  bool operator==(const LedgerConfig&) const = default;
};

// [faults]: injected faults (docs/faults.md).
struct FaultsConfig {
  double drop_probability = 0;
  double delay_probability = 0;
  int delay_rounds = 1;
  std::vector<int> kill_nodes = {};
  int kill_step = 0;

  bool any() const { return drop_probability > 0 || delay_probability > 0 || !kill_nodes.empty(); }
  bool operator==(const FaultsConfig&) const = default;
};

// The whole experiment. A default-constructed ExperimentConfig holds the documented defaults
// (the same as load_experiment_config(std::nullopt, {})).
// The longest run.name, in bytes: a folder name has at most 255 bytes on common file systems, and
// the run folder adds "-YYYYMMDD-HHMMSS" and perhaps "-k".
constexpr std::size_t kMostRunNameBytes = 200;

struct ExperimentConfig {
  RunConfig run;
  DataConfig data;
  ModelConfig model;
  QuantConfig quant;
  GraphConfig graph;
  AlgoConfig algo;
  OptimConfig optim;
  EvalConfig eval;
  LedgerConfig ledger;
  FaultsConfig faults;

  bool operator==(const ExperimentConfig&) const = default;
};

// The names of an enum's values as they appear in configuration files, indexed by the value:
// config_names<GraphConfig::Topology>()[1] == "ring". Keep each list in its enum's order.
template <typename E>
struct ConfigEnumNames;

#define LPDT_CONFIG_ENUM_NAMES(Enum, ...)                                          \
  template <>                                                                      \
  struct ConfigEnumNames<Enum> {                                                   \
    static constexpr auto kNames = std::to_array<std::string_view>({__VA_ARGS__}); \
  };
LPDT_CONFIG_ENUM_NAMES(RunConfig::Device, "cpu", "cuda")
LPDT_CONFIG_ENUM_NAMES(RunConfig::CudaGraph, "auto", "off")
LPDT_CONFIG_ENUM_NAMES(DataConfig::Dataset, "fashion-mnist", "mnist", "cifar10", "cifar100",
                       "synthetic", "imagenette", "ag-news", "sentlen", "synthetic-text")
LPDT_CONFIG_ENUM_NAMES(DataConfig::Partition, "skew", "dirichlet", "shards", "iid")
LPDT_CONFIG_ENUM_NAMES(DataConfig::SkewMode, "lpdt", "reference")
LPDT_CONFIG_ENUM_NAMES(DataConfig::OnDevice, "auto", "on", "off")
LPDT_CONFIG_ENUM_NAMES(ModelConfig::Arch, "resnet", "vgg11", "lenet5", "mlp", "resnet18",
                       "resnet34", "mobilenetv2", "distilbert", "transformer")
LPDT_CONFIG_ENUM_NAMES(ModelConfig::Norm, "evonorm", "batchnorm", "groupnorm", "rangeevonorm",
                       "rangebatchnorm", "none")
LPDT_CONFIG_ENUM_NAMES(ModelConfig::Precision, "fp32", "bf16", "int8")
LPDT_CONFIG_ENUM_NAMES(ModelConfig::ResidualInit, "reference", "one")
LPDT_CONFIG_ENUM_NAMES(QuantConfig::Backend, "simulated", "integer")
LPDT_CONFIG_ENUM_NAMES(QuantConfig::Scheme, "gemmlowp", "reference")
LPDT_CONFIG_ENUM_NAMES(QuantConfig::Rounding, "nearest", "stochastic")
LPDT_CONFIG_ENUM_NAMES(QuantConfig::RangeEvonorm, "reference", "paper", "std")
LPDT_CONFIG_ENUM_NAMES(QuantConfig::RangeState, "buffer", "param")
LPDT_CONFIG_ENUM_NAMES(QuantConfig::WeightGrad, "fp32", "bf16")
LPDT_CONFIG_ENUM_NAMES(GraphConfig::Topology, "directed-ring", "ring", "torus", "complete",
                       "exponential", "random", "one-peer-exponential")
LPDT_CONFIG_ENUM_NAMES(GraphConfig::Mixing, "uniform", "metropolis")
LPDT_CONFIG_ENUM_NAMES(AlgoConfig::Name, "dpsgd", "deep-squeeze", "choco")
LPDT_CONFIG_ENUM_NAMES(AlgoConfig::Compressor, "none", "topk", "randomk")
LPDT_CONFIG_ENUM_NAMES(AlgoConfig::ChocoInit, "zero", "model")
LPDT_CONFIG_ENUM_NAMES(AlgoConfig::MessageValues, "fp32", "bf16", "int8")
LPDT_CONFIG_ENUM_NAMES(OptimConfig::Schedule, "constant", "multistep", "cosine")
LPDT_CONFIG_ENUM_NAMES(OptimConfig::Warmup, "official", "none")
LPDT_CONFIG_ENUM_NAMES(OptimConfig::Optimizer, "sgd", "adam", "adamw")
LPDT_CONFIG_ENUM_NAMES(EvalConfig::Protocol, "average", "reference")
LPDT_CONFIG_ENUM_NAMES(LedgerConfig::Accounting, "lpdt", "reference")
#undef LPDT_CONFIG_ENUM_NAMES

// An enum with configuration names.
template <typename E>
concept ConfigEnum = requires {
  ConfigEnumNames<E>::kNames;
};

template <ConfigEnum E>
constexpr const auto& config_names() {
  return ConfigEnumNames<E>::kNames;
}

// "directed-ring" for GraphConfig::Topology::kDirectedRing.
template <ConfigEnum E>
constexpr std::string_view to_string(E value) {
  return ConfigEnumNames<E>::kNames.at(static_cast<std::size_t>(value));
}

// The value named `name`, or nullopt.
template <ConfigEnum E>
constexpr std::optional<E> config_enum_from_string(std::string_view name) {
  const auto& names = ConfigEnumNames<E>::kNames;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

// The schema of an experiment: every key of the sections run, data, model, graph, algo, optim,
// eval, ledger and faults, with the cross-key rules. Built once; lives for the whole program.
const ConfigSchema& experiment_schema();

// defaults < the TOML file at `path` (if any) < `overrides` ("section.key=value" each), validated
// against experiment_schema(). Throws ConfigError naming every problem (file:line or --set, the
// key, the value, what was expected).
Config resolve_experiment_config(const std::optional<std::string>& path,
                                 const std::vector<std::string>& overrides);

// The typed view of a resolved experiment configuration.
ExperimentConfig experiment_config_from(const Config& resolved);

// Whether model.arch builds normalisation layers of model.norm's kind: the ResNets, MobileNetV2
// and VGG-11. LeNet-5 and the MLP have none, and the transformers always use LayerNorm; for them
// model.norm changes nothing, and the run records "none" (summary.json's "model", cost.json).
bool arch_uses_model_norm(const std::string& arch);

// resolve_experiment_config + experiment_config_from.
ExperimentConfig load_experiment_config(const std::optional<std::string>& path,
                                        const std::vector<std::string>& overrides);

// The struct written back into a Config (every value marked as set by the program), validated
// with the schema's ranges and cross-key rules: throws ConfigError if the struct holds a value
// the schema rejects.
Config to_config(const ExperimentConfig& config);

// The resolved configuration as TOML (every key, documented; parsing it again gives the same
// struct) and as JSON ({"run": {...}, "data": {...}, ...}) for summary.json.
std::string to_toml(const ExperimentConfig& config);
nlohmann::json to_json(const ExperimentConfig& config);

}  // namespace lpdt
