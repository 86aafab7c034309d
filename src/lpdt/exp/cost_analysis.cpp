#include "lpdt/exp/cost_analysis.h"

#include <sstream>

#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "lpdt/algo/decentralized_optimizer.h"
#include "lpdt/comm/wire_payload.h"
#include "lpdt/compress/compressor.h"
#include "lpdt/core/error.h"
#include "lpdt/exp/bench_stats.h"
#include "lpdt/exp/toml_error_text.h"
#include "lpdt/graph/factory.h"
#include "lpdt/graph/topology.h"
#include "lpdt/metrics/byte_ledger.h"
#include "lpdt/models/model.h"
#include "lpdt/models/node_batched_step.h"

namespace lpdt::exp {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string format(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

ExperimentConfig at_precision(ExperimentConfig config, const std::string& precision) {
  if (precision == "fp32") {
    config.model.precision = ModelConfig::Precision::kFp32;
  } else if (precision == "int8") {
    config.model.precision = ModelConfig::Precision::kInt8;
  } else {
    throw ConfigError("cost: precision '" + precision + "' is not one of fp32, int8");
  }
  return config;
}

std::unique_ptr<graph::TopologySchedule> topology_of(const ExperimentConfig& config) {
  return graph::make_topology(graph::TopologyOptions()
                                  .name(std::string(to_string(config.graph.topology)))
                                  .num_nodes(config.graph.nodes)
                                  .mixing(std::string(to_string(config.graph.mixing)))
                                  .seed(config.run.seed)
                                  .rows(config.graph.torus_rows)
                                  .random_out_degree(config.graph.random_out_degree));
}

// One forward pass of one node's model on a batch of zeros, traced (nn/tracing_layer.h).
std::vector<TracedLayer> trace_forward(const models::Model& model,
                                       const models::ModelOptions& options,
                                       std::int64_t batch_size) {
  return models::trace_forward(
      model, torch::zeros({1, batch_size, options.in_channels, options.height, options.width}));
}

std::int64_t trainable_params(const models::Model& model) {
  std::int64_t count = 0;
  const auto& segments = model.layout().segments;
  for (std::size_t s = 0; s < segments.size(); ++s) {
    if (model.registry().trainable()[s]) count += segments[s].numel;
  }
  return count;
}

// One outgoing message as the wire format encodes it (comm/wire_payload.h), with a sparsifier's
// kept positions spread evenly over each layer (their delta-varint size depends on the gaps).
double message_bytes(const ExperimentConfig& config, const LayerLayout& layout) {
  comm::Message message;
  const bool sparse = config.algo.compressor != AlgoConfig::Compressor::kNone;
  for (const LayerSegment& segment : layout.segments) {
    comm::LayerMessage layer;
    layer.numel = static_cast<std::uint32_t>(segment.numel);
    std::int64_t kept = segment.numel;
    if (sparse) kept = compress::kept_count(segment.numel, config.algo.keep_fraction);
    if (kept < segment.numel) {
      for (std::int64_t e = 0; e < kept; ++e) {
        layer.indices.push_back(static_cast<std::uint32_t>(e * segment.numel / kept));
      }
    }
    switch (config.algo.message_values) {
      case AlgoConfig::MessageValues::kFp32:
        layer.format = comm::ValueFormat::kFloat32;
        layer.f32.assign(static_cast<std::size_t>(kept), 0.0f);
        break;
      case AlgoConfig::MessageValues::kBf16:
        layer.format = comm::ValueFormat::kBfloat16;
        layer.bf16.assign(static_cast<std::size_t>(kept), 0);
        break;
      case AlgoConfig::MessageValues::kInt8:
        layer.format = comm::ValueFormat::kInt8;
        layer.codes.assign(static_cast<std::size_t>(kept), 0);
        break;
    }
    message.layers.push_back(std::move(layer));
  }
  return static_cast<double>(comm::message_bytes(message));
}

metrics::MemoryInputs memory_inputs(const ExperimentConfig& config, const LayerLayout& layout,
                                    std::int64_t params) {
  metrics::MemoryInputs in;
  in.params = params;
  in.low_precision = config.model.precision == ModelConfig::Precision::kInt8;
  const auto topology = topology_of(config);
  const graph::Topology& graph = topology->at(0);
  for (std::int64_t i = 0; i < graph.num_nodes(); ++i) {
    in.in_degree = std::max(in.in_degree, graph.in_degree(i));
  }
  // Adam's moments m and v (optim.momentum is SGD's and does not apply); SGD's momentum buffer,
  // or QGM's buffer m plus the pre-step parameters it differences.
  if (config.optim.optimizer != OptimConfig::Optimizer::kSgd) {
    in.optimizer_copies = 2;
  } else if (config.algo.qgm) {
    in.optimizer_copies = 2;
  } else if (config.optim.momentum > 0) {
    in.optimizer_copies = 1;
  }
  switch (config.algo.name) {
    case AlgoConfig::Name::kDpsgd:
      in.algorithm_copies = 0;
      break;
    case AlgoConfig::Name::kDeepSqueeze:
      in.algorithm_copies = 1;  // the error feedback e
      break;
    case AlgoConfig::Name::kChoco:
      // Its own x-hat and a copy of each in-neighbour's (algo/choco.h; the official code keeps
      // their running sum instead: 2 copies on any graph).
      in.algorithm_copies = 1 + in.in_degree;
      break;
  }
  in.message_bytes = message_bytes(config, layout);
  return in;
}

// A real training step of graph.nodes nodes in the simulator (one node per pass, the CPU
// engine's configuration), measured from the allocator as `lpdt bench --precision` does.
MeasuredMemory measure_step(const ExperimentConfig& config, const models::ModelOptions& options) {
  const std::int64_t n = config.graph.nodes;
  const std::int64_t b = config.data.batch_size;
  const double heap_before = heap_bytes_in_use();
  const auto model = models::make_model(options);
  const auto topology = topology_of(config);
  const at::Tensor mixing = topology->at(0).mixing_matrix(at::kFloat);
  at::Tensor x = model->init_params(config.run.seed).unsqueeze(0).repeat({n, 1});
  std::vector<at::Tensor> buffers = model->init_buffers(n);
  algo::DecentralizedOptimizer optimizer(algorithm_options(config, 0), n, model->layout());
  metrics::ByteLedger ledger = optimizer.make_ledger();
  at::Tensor grad = at::zeros_like(x);
  torch::manual_seed(0);
  const at::Tensor inputs = torch::randn({n, b, options.in_channels, options.height, options.width});
  const at::Tensor targets = torch::randint(0, options.num_classes, {n, b}, torch::kLong);
  const double batch_bytes = static_cast<double>(inputs.nbytes() + targets.nbytes());
  double activations = 0;
  for (std::int64_t step = 0; step < 2; ++step) {  // the second step sees every buffer allocated
    for (std::int64_t i = 0; i < n; ++i) {
      at::Tensor xi = x.narrow(0, i, 1).detach().requires_grad_(true);
      std::vector<at::Tensor> node_buffers;
      for (const auto& buffer : buffers) node_buffers.push_back(buffer.narrow(0, i, 1));
      nn::Context ctx{&model->layout(), xi, &node_buffers, 1, true};
      ctx.draws = quant::DrawKey{config.run.seed, step, i};
      const double before = heap_bytes_in_use();
      const at::Tensor loss = models::node_batched_loss(model->forward(ctx, inputs.narrow(0, i, 1)),
                                                        targets.narrow(0, i, 1));
      activations = std::max(activations, heap_bytes_in_use() - before);
      loss.backward();
      grad.narrow(0, i, 1).copy_(xi.grad());
    }
    torch::NoGradGuard no_grad;
    optimizer.step(x, grad, mixing, config.optim.lr, step, ledger);
  }
  MeasuredMemory m;
  m.nodes = n;
  m.state_mib = (heap_bytes_in_use() - heap_before - batch_bytes) / static_cast<double>(n) / kMiB;
  m.activations_mib = activations / kMiB;
  m.peak_rss_mib = peak_resident_bytes() / kMiB;
  m.quant_backend = options.quant.low_precision()
                        ? std::string(to_string(config.quant.backend))
                        : "none";
  return m;
}

nlohmann::json memory_json(const metrics::MemoryBreakdown& m) {
  return {{"weights", m.weights / kMiB},         {"activations", m.activations / kMiB},
          {"gradients", m.gradients / kMiB},     {"optimizer", m.optimizer / kMiB},
          {"communication", m.communication / kMiB}, {"total", m.total() / kMiB}};
}

}  // namespace

CostReport analyse_cost(const CostOptions& options) {
  CostReport report;
  report.arch = std::string(to_string(options.config.model.arch));
  const bool has_norm = arch_uses_model_norm(std::string(to_string(options.config.model.arch)));
  report.norm = has_norm ? std::string(to_string(options.config.model.norm)) : "none";
  report.algorithm = std::string(to_string(options.config.algo.name));
  report.batch_size = options.config.data.batch_size;
  report.energy = options.energy;
  // What the tables do not model, said rather than ignored.
  const QuantConfig& quant = options.config.quant;
  if (quant.bits != 8 || quant.grad_bits != 8) {
    report.notes.push_back(
        "quant.bits = " + std::to_string(quant.bits) + " and quant.grad_bits = " +
        std::to_string(quant.grad_bits) +
        " are not modelled: the int8 column counts 8-bit operations and bytes (the paper's "
        "cost model, Tables 7 and 9, is for 8 bits)");
  }
  if (options.measure && options.config.run.device != RunConfig::Device::kCpu) {
    report.notes.push_back(
        "--measure ran its training steps on the CPU (the CPU engine's configuration, measured "
        "from its allocator), not on run.device = " +
        std::string(to_string(options.config.run.device)));
  }
  for (const std::string& precision : options.precisions) {
    if (precision == "int8" && has_norm &&
        options.config.model.norm == ModelConfig::Norm::kGroupnorm) {
      report.notes.push_back(
          "no int8 column: model.norm = 'groupnorm' has no 8-bit version (Range EvoNorm, evonorm, "
          "or Range BatchNorm, batchnorm, have)");
      continue;
    }
    const ExperimentConfig config = at_precision(options.config, precision);
    models::ModelOptions model_options = model_options_for(config, options.input);
    // The trace follows the function, which both backends compute alike: trace the simulated one.
    models::ModelOptions traced_options = model_options;
    traced_options.quant.backend = quant::QuantBackend::kSimulated;
    const auto model = models::make_model(traced_options);
    PrecisionCost cost;
    cost.precision = precision;
    cost.model_name = model->name();
    cost.params = trainable_params(*model);
    cost.trace = trace_forward(*model, traced_options, config.data.batch_size);
    const bool low_precision = traced_options.quant.low_precision();
    for (const TracedLayer& layer : cost.trace) {
      cost.training_ops += metrics::count_ops(layer, metrics::CostPhase::kTraining);
      cost.inference_ops += metrics::count_ops(layer, metrics::CostPhase::kInference);
    }
    cost.training_energy_mj = metrics::energy_mj(cost.training_ops, options.energy, low_precision);
    cost.inference_energy_mj =
        metrics::energy_mj(cost.inference_ops, options.energy, low_precision);
    cost.memory_inputs = memory_inputs(config, model->layout(), cost.params);
    cost.training_memory = metrics::training_memory(cost.trace, cost.memory_inputs);
    cost.inference_memory = metrics::inference_memory(cost.params, low_precision);
    if (options.measure) {
      cost.measured = true;
      cost.measured_memory = measure_step(config, model_options);
    }
    report.precisions.push_back(std::move(cost));
  }
  return report;
}

metrics::EnergyTable load_energy_table(const std::string& path) {
  toml::table table;
  const std::string file_text = read_toml_file_text(path, "cost --energy-table");
  try {
    table = toml::parse(file_text, path);
  } catch (const toml::parse_error& e) {
    throw ConfigError("cost --energy-table " + path + ":" +
                      std::to_string(e.source().begin.line) + ": " +
                      toml_error_text(e.description(), file_text, e.source().begin.line));
  }
  metrics::EnergyTable energy;
  if (table.contains("name") && !table["name"].is_string()) {
    throw ConfigError("cost --energy-table " + path + ": key 'name' must be a string");
  }
  energy.name = table["name"].value_or(path);
  if (energy.name.find_first_not_of(" \t") == std::string::npos) {
    throw ConfigError("cost --energy-table " + path +
                      ": key 'name' is empty: give the table a name for the report, or leave "
                      "the key out (the file's path names it)");
  }
  // A microjoule per operation is far beyond any circuit (a DRAM access costs hundreds of pJ),
  // and larger values would overflow the totals to inf. Below 1e-9 pJ is below Landauer's limit
  // for erasing one bit (kT ln 2, about 3e-9 pJ at room temperature), and values far smaller
  // (subnormal doubles) made the totals and ratios underflow to 0 and inf.
  constexpr double kMostPicojoules = 1e6;
  constexpr double kLeastPicojoules = 1e-9;
  // Unknown keys first: a section header ([energy]) above the keys would otherwise read as
  // every key missing.
  for (const auto& [key, value] : table) {
    const std::string k(key.str());
    if (k != "name" && k != "fp32_add_pj" && k != "fp32_mult_pj" && k != "int8_add_pj" &&
        k != "int8_mult_pj") {
      throw ConfigError("cost --energy-table " + path + ":" +
                        std::to_string(value.source().begin.line) + ": unknown " +
                        (value.is_table() ? "section [" + k + "]" : "key '" + k + "'") +
                        " (expected the top-level keys name, fp32_add_pj, fp32_mult_pj, "
                        "int8_add_pj, int8_mult_pj)");
    }
  }
  const auto read = [&](const char* key, double& value) {
    const auto node = table[key];
    const std::optional<double> v = node.value<double>();
    if (!v || !(*v >= kLeastPicojoules) || !(*v <= kMostPicojoules)) {
      std::ostringstream given;
      if (node) {
        given << " (line " << node.node()->source().begin.line << ": got ";
        if (const auto number = node.value<double>()) {
          given << *number;
        } else if (const auto text = node.value<std::string>()) {
          given << "the string \"" << *text << "\"";
        } else {
          given << "a " << node.type();
        }
        given << ")";
      }
      throw ConfigError("cost --energy-table " + path + ": key '" + key +
                        "' must be a number of picojoules per operation from 1e-9 to 1e6" +
                        (node ? given.str() : " (missing)"));
    }
    value = *v;
  };
  read("fp32_add_pj", energy.fp32_add_pj);
  read("fp32_mult_pj", energy.fp32_mult_pj);
  read("int8_add_pj", energy.int8_add_pj);
  read("int8_mult_pj", energy.int8_mult_pj);
  return energy;
}

nlohmann::json to_json(const CostReport& report) {
  nlohmann::json j;
  j["model"] = report.arch;
  j["norm"] = report.norm;
  j["algorithm"] = report.algorithm;
  j["batch_size"] = report.batch_size;
  if (!report.notes.empty()) j["notes"] = report.notes;
  j["energy_table"] = {{"name", report.energy.name},
                       {"fp32_add_pj", report.energy.fp32_add_pj},
                       {"fp32_mult_pj", report.energy.fp32_mult_pj},
                       {"int8_add_pj", report.energy.int8_add_pj},
                       {"int8_mult_pj", report.energy.int8_mult_pj}};
  j["precisions"] = nlohmann::json::array();
  for (const PrecisionCost& c : report.precisions) {
    nlohmann::json p;
    p["precision"] = c.precision;
    p["model_name"] = c.model_name;
    p["params"] = c.params;
    p["training"] = {{"adds", c.training_ops.adds},
                     {"mults", c.training_ops.mults},
                     {"energy_mj", c.training_energy_mj},
                     {"memory_mib", memory_json(c.training_memory)}};
    p["inference"] = {{"adds", c.inference_ops.adds},
                      {"mults", c.inference_ops.mults},
                      {"energy_mj", c.inference_energy_mj},
                      {"memory_mib", {{"weights", c.inference_memory.weights / kMiB},
                                      {"total", c.inference_memory.total() / kMiB}}}};
    p["memory_model"] = {{"in_degree", c.memory_inputs.in_degree},
                         {"optimizer_copies", c.memory_inputs.optimizer_copies},
                         {"algorithm_copies", c.memory_inputs.algorithm_copies},
                         {"message_bytes", c.memory_inputs.message_bytes}};
    if (c.measured) {
      p["measured"] = {{"nodes", c.measured_memory.nodes},
                       {"state_mib_per_node", c.measured_memory.state_mib},
                       {"activations_mib_per_node_pass", c.measured_memory.activations_mib},
                       {"process_peak_rss_mib", c.measured_memory.peak_rss_mib},
                       {"quant_backend", c.measured_memory.quant_backend}};
    }
    nlohmann::json layers = nlohmann::json::array();
    for (const TracedLayer& l : c.trace) {
      const metrics::OpCounts train = metrics::count_ops(l, metrics::CostPhase::kTraining);
      layers.push_back({{"name", l.name},
                        {"op", to_string(l.op)},
                        {"batch", l.batch},
                        {"in_channels", l.in_channels},
                        {"out_channels", l.out_channels},
                        {"kernel", l.kernel},
                        {"stride", l.stride},
                        {"padding", l.padding},
                        {"groups", l.groups},
                        {"height", l.height},
                        {"width", l.width},
                        {"training_adds", train.adds},
                        {"training_mults", train.mults}});
    }
    p["layers"] = std::move(layers);
    j["precisions"].push_back(std::move(p));
  }
  return j;
}

std::string describe(const CostReport& report, bool per_layer) {
  std::string out = format(
      "cost model: %s (%s), %s, batch %lld per node, energies %s (pJ: fp32 add %.3g mult %.3g, "
      "int8 add %.3g mult %.3g)\n",
      report.arch.c_str(), report.norm.c_str(), report.algorithm.c_str(),
      static_cast<long long>(report.batch_size), report.energy.name.c_str(),
      report.energy.fp32_add_pj, report.energy.fp32_mult_pj, report.energy.int8_add_pj,
      report.energy.int8_mult_pj);
  for (const std::string& note : report.notes) out += "note: " + note + "\n";
  out += "per node, per iteration       ";
  for (const PrecisionCost& c : report.precisions) out += format("%14s", c.precision.c_str());
  if (report.precisions.size() == 2) out += "   fp32/int8";
  out += "\n";
  const auto row = [&](const char* label, auto value_of) {
    out += format("%-30s", label);
    std::vector<double> values;
    for (const PrecisionCost& c : report.precisions) {
      values.push_back(value_of(c));
      out += format("%14.4g", values.back());
    }
    if (values.size() == 2 && values[1] > 0) {
      // Energy tables span 1e-9 to 1e6 pJ: ratios up to 1e15 print in exponent form.
      const double ratio = values[0] / values[1];
      out += format(ratio < 1e5 ? "   %8.2fx" : "   %8.3gx", ratio);
    }
    out += "\n";
  };
  row("parameters", [](const PrecisionCost& c) { return static_cast<double>(c.params); });
  row("training adds", [](const PrecisionCost& c) { return c.training_ops.adds; });
  row("training mults", [](const PrecisionCost& c) { return c.training_ops.mults; });
  row("training energy (mJ)", [](const PrecisionCost& c) { return c.training_energy_mj; });
  row("inference adds", [](const PrecisionCost& c) { return c.inference_ops.adds; });
  row("inference mults", [](const PrecisionCost& c) { return c.inference_ops.mults; });
  row("inference energy (mJ)", [](const PrecisionCost& c) { return c.inference_energy_mj; });
  row("memory: weights (MiB)", [](const PrecisionCost& c) { return c.training_memory.weights / kMiB; });
  row("memory: activations (MiB)",
      [](const PrecisionCost& c) { return c.training_memory.activations / kMiB; });
  row("memory: gradients (MiB)",
      [](const PrecisionCost& c) { return c.training_memory.gradients / kMiB; });
  row("memory: optimizer (MiB)",
      [](const PrecisionCost& c) { return c.training_memory.optimizer / kMiB; });
  row("memory: communication (MiB)",
      [](const PrecisionCost& c) { return c.training_memory.communication / kMiB; });
  row("training memory (MiB)", [](const PrecisionCost& c) { return c.training_memory.total() / kMiB; });
  row("inference memory (MiB)",
      [](const PrecisionCost& c) { return c.inference_memory.total() / kMiB; });
  bool measured = false;
  for (const PrecisionCost& c : report.precisions) measured = measured || c.measured;
  if (measured) {
    out += "measured in a real training step (allocator; docs/cost.md):\n";
    row("  state per node (MiB)",
        [](const PrecisionCost& c) { return c.measured_memory.state_mib; });
    row("  activations per node (MiB)",
        [](const PrecisionCost& c) { return c.measured_memory.activations_mib; });
    out += format("  process peak RSS after the steps: %.1f MiB (LibTorch included)\n",
                  report.precisions.back().measured_memory.peak_rss_mib);
  }
  if (per_layer) {
    for (const PrecisionCost& c : report.precisions) {
      out += format("\n%s layers (training adds / mults, inference adds / mults):\n",
                    c.model_name.c_str());
      for (const TracedLayer& l : c.trace) {
        const metrics::OpCounts t = metrics::count_ops(l, metrics::CostPhase::kTraining);
        const metrics::OpCounts i = metrics::count_ops(l, metrics::CostPhase::kInference);
        out += format("  %-34s %-26s b%-4lld %4lld->%-4lld k%lld s%lld p%lld %lldx%lld  %11.4g %11.4g "
                      "%11.4g %11.4g\n",
                      l.name.c_str(), to_string(l.op), static_cast<long long>(l.batch),
                      static_cast<long long>(l.in_channels), static_cast<long long>(l.out_channels),
                      static_cast<long long>(l.kernel), static_cast<long long>(l.stride),
                      static_cast<long long>(l.padding), static_cast<long long>(l.height),
                      static_cast<long long>(l.width), t.adds, t.mults, i.adds, i.mults);
      }
    }
  }
  return out;
}

std::string paper_table10(const metrics::EnergyTable& energy) {
  // The paper's Table 10 (per node, batch 32, CIFAR-10): training and inference memory (MB) and
  // energy (mJ), Choco vs LP-Choco.
  struct PaperRow {
    const char* model;
    const char* norm;
    int depth;
    double train_mem[2], train_mj[2], infer_mem[2], infer_mj[2];
  };
  const PaperRow paper[] = {
      {"resnet", "batchnorm", 20, {170.60, 46.15}, {68.75, 3.45}, {1.04, 0.26}, {22.92, 1.16}},
      {"resnet", "evonorm", 20, {124.60, 35.43}, {68.82, 3.45}, {1.04, 0.26}, {22.96, 1.16}},
      {"resnet", "batchnorm", 54, {424.85, 117.05}, {392.55, 19.69}, {2.89, 0.72}, {130.85, 6.60}},
      {"resnet", "evonorm", 54, {308.85, 88.05}, {392.95, 19.71}, {2.89, 0.72}, {131.07, 6.61}},
      {"vgg11", "batchnorm", 0, {300.48, 210.95}, {173.56, 8.69}, {36.22, 9.01}, {57.85, 2.90}},
      {"vgg11", "evonorm", 0, {263.48, 201.70}, {173.61, 8.70}, {36.22, 9.01}, {57.88, 2.90}},
  };
  std::string out =
      "Table 10 recomputed (per node, batch 32, CIFAR-10 3x32x32, Choco vs LP-Choco with 8-bit "
      "messages, directed ring); each pair: lpdt, then the paper\n";
  out += format("%-10s %-5s | %-27s | %-27s | %-23s | %-23s\n", "model", "norm",
                "training memory MiB (C, LP)", "training energy mJ (C, LP)",
                "inference MiB (C, LP)", "inference mJ (C, LP)");
  for (const PaperRow& row : paper) {
    ExperimentConfig config;
    config.model.arch = std::string(row.model) == "vgg11" ? ModelConfig::Arch::kVgg11
                                                          : ModelConfig::Arch::kResnet;
    if (row.depth > 0) config.model.depth = row.depth;
    config.model.norm = std::string(row.norm) == "evonorm" ? ModelConfig::Norm::kEvonorm
                                                           : ModelConfig::Norm::kBatchnorm;
    config.data.batch_size = 32;
    config.graph.nodes = 8;
    config.algo.name = AlgoConfig::Name::kChoco;
    CostOptions fp32_options{config, InputShape{3, 32, 32, 10}, energy};
    fp32_options.precisions = {"fp32"};
    config.algo.message_values = AlgoConfig::MessageValues::kInt8;  // LP-Choco's messages
    CostOptions int8_options{config, InputShape{3, 32, 32, 10}, energy};
    int8_options.precisions = {"int8"};
    const PrecisionCost fp = analyse_cost(fp32_options).precisions.at(0);
    const PrecisionCost lp = analyse_cost(int8_options).precisions.at(0);
    const std::string name =
        row.depth > 0 ? format("ResNet-%d", row.depth) : std::string("VGG-11");
    out += format(
        "%-10s %-5s | %6.2f %6.2f | %6.2f %6.2f | %6.2f %5.2f | %6.2f %5.2f | %5.2f %4.2f | %5.2f "
        "%4.2f | %6.2f %5.2f | %6.2f %5.2f\n",
        name.c_str(), std::string(row.norm) == "evonorm" ? "REN" : "RBN",
        fp.training_memory.total() / kMiB, row.train_mem[0], lp.training_memory.total() / kMiB,
        row.train_mem[1], fp.training_energy_mj, row.train_mj[0], lp.training_energy_mj,
        row.train_mj[1], fp.inference_memory.total() / kMiB, row.infer_mem[0],
        lp.inference_memory.total() / kMiB, row.infer_mem[1], fp.inference_energy_mj,
        row.infer_mj[0], lp.inference_energy_mj, row.infer_mj[1]);
    out += format("%-16s   efficiency (fp32 / 8-bit): training memory %.2fx (paper %.2fx), "
                  "training energy %.2fx (paper %.2fx), inference energy %.2fx (paper %.2fx)\n",
                  "", fp.training_memory.total() / lp.training_memory.total(),
                  row.train_mem[0] / row.train_mem[1], fp.training_energy_mj / lp.training_energy_mj,
                  row.train_mj[0] / row.train_mj[1], fp.inference_energy_mj / lp.inference_energy_mj,
                  row.infer_mj[0] / row.infer_mj[1]);
  }
  return out;
}

}  // namespace lpdt::exp
