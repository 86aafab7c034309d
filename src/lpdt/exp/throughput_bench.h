#pragma once
// `lpdt bench`: training throughput of the node-batched engine against one model per node run
// in turn (the official code's approach), measured in the same process, same data, same step.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lpdt::exp {

struct ThroughputBenchOptions {
  std::string arch = "resnet";
  std::int64_t depth = 20;
  std::vector<std::int64_t> nodes = {8, 16};
  std::int64_t batch_size = 32;  // per node
  std::int64_t steps = 10;       // timed steps per measurement (median reported)
  std::int64_t warmup_steps = 2;
  int threads = 0;
  std::int64_t channels = 3;
  std::int64_t size = 32;
  std::int64_t nodes_per_pass = 1;  // the engine's pass size (0 = all nodes in one pass)
  std::string device = "cpu";       // cpu | cuda
  std::string precision = "fp32";   // fp32 | int8 (simulated backend: runs on any device)
  std::string norm = "evonorm";     // the model's normalisation (ModelOptions::norm)
  std::string json_path;
};

struct ThroughputResult {
  std::int64_t nodes = 0;
  double batched_step_ms = 0;   // median
  double per_node_step_ms = 0;  // median
  double batched_images_per_s = 0;
  double per_node_images_per_s = 0;
  double speedup = 0;                   // engine / per-node
  // CPU: all nodes in one pass, grouped convolutions. CUDA (where the engine already runs that
  // way): the engine's step captured once as a CUDA graph and replayed.
  double one_pass_grouped_step_ms = 0;
  double one_pass_grouped_images_per_s = 0;
};

// One full training step in each mode: forward, backward, local SGD + one Choco-SGD gossip round
// on a directed ring. Modes: the engine (nodes_per_pass nodes per forward/backward pass, batched
// optimizer and gossip), n separate models run in turn (the official code's approach), and the
// engine with all nodes in one pass through grouped convolutions (the GPU's configuration). On a
// CUDA device the engine runs all nodes in one pass, and the third mode replays the engine's step
// as a CUDA graph. Prints a table through `progress` and returns the rows.
std::vector<ThroughputResult> run_throughput_bench(
    const ThroughputBenchOptions& options, const std::function<void(const std::string&)>& progress);

}  // namespace lpdt::exp
