#pragma once
// `lpdt cost` (docs/cost.md): the paper's hardware cost model (section 5, Tables 7-10) for one
// experiment's model and algorithm, at fp32 and at 8 bits side by side: operation counts per
// layer from a traced forward pass of the real model, energy, per-node memory by what holds it,
// and, next to the analytic memory, the memory a real training step measurably holds.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "lpdt/core/layer_trace.h"
#include "lpdt/exp/config_options.h"
#include "lpdt/exp/experiment_config.h"
#include "lpdt/metrics/cost_model.h"

namespace lpdt::exp {

struct CostOptions {
  ExperimentConfig config;          // model, data (input shape, batch), algo, optim and graph
  InputShape input;                 // see dataset_input_shape
  metrics::EnergyTable energy;      // per-operation energies (load_energy_table)
  bool measure = false;             // also time a real training step and measure its memory
  std::vector<std::string> precisions = {"fp32", "int8"};
};

// Memory a real training step held, per node, from the allocator (exp/bench_stats.h).
struct MeasuredMemory {
  std::int64_t nodes = 0;      // the simulator ran graph.nodes nodes
  double state_mib = 0;        // parameters, gradients, optimizer and algorithm buffers
  double activations_mib = 0;  // held by one node's pass between forward and backward
  double peak_rss_mib = 0;     // the whole process (LibTorch included), after the step
  std::string quant_backend;   // what the 8-bit step ran on
};

struct PrecisionCost {
  std::string precision;  // fp32 | int8
  std::string model_name;
  std::int64_t params = 0;  // one node's trainable parameters
  std::vector<TracedLayer> trace;
  metrics::OpCounts training_ops;
  metrics::OpCounts inference_ops;
  double training_energy_mj = 0;
  double inference_energy_mj = 0;
  metrics::MemoryInputs memory_inputs;
  metrics::MemoryBreakdown training_memory;   // bytes
  metrics::MemoryBreakdown inference_memory;  // bytes
  bool measured = false;
  MeasuredMemory measured_memory;
};

struct CostReport {
  std::string arch;
  std::string norm;
  std::string algorithm;
  std::int64_t batch_size = 0;
  metrics::EnergyTable energy;
  std::vector<PrecisionCost> precisions;
  // Precisions asked for and left out, with why (group norm has no 8-bit version).
  std::vector<std::string> notes;
};

CostReport analyse_cost(const CostOptions& options);

// Per-operation energies from a TOML file with the keys name (string), fp32_add_pj,
// fp32_mult_pj, int8_add_pj and int8_mult_pj (numbers > 0). A missing file, key or a bad value is
// a ConfigError naming the file, the key and what is expected.
metrics::EnergyTable load_energy_table(const std::string& path);

// The report as cost.json (docs/cost.md): sizes in MiB, energies in mJ.
nlohmann::json to_json(const CostReport& report);
// A readable summary; per_layer adds each precision's layer table.
std::string describe(const CostReport& report, bool per_layer);

// The paper's Table 10 recomputed (ResNet-20, ResNet-54 and VGG-11 on CIFAR-10, Range BN and
// Range EvoNorm, batch 32, Choco vs LP-Choco on a directed ring) next to the paper's numbers.
std::string paper_table10(const metrics::EnergyTable& energy);

}  // namespace lpdt::exp
