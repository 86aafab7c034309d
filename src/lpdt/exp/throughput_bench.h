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
  std::int64_t nodes_per_pass = 0;  // the engine's pass size (0 = automatic, as run.nodes_per_pass)
  // The engine's passes side by side on this many workers (run.pass_workers: 0 = automatic).
  int pass_workers = 0;
  std::string device = "cpu";       // cpu | cuda
  std::string precision = "fp32";   // fp32 | bf16 | int8 (simulated backend: runs on any device)
  std::string norm = "evonorm";     // the model's normalisation (ModelOptions::norm)
  std::string json_path;
  // Which mode's timed steps run between cudaProfilerStart and cudaProfilerStop, for an external
  // profiler started with collection off (ncu --profile-from-start off): none, engine (eager) or
  // cuda-graph (the replays). CUDA builds with lpdt's kernels only.
  std::string cuda_profiler_range = "none";
};

struct ThroughputResult {
  std::int64_t nodes = 0;
  std::int64_t engine_nodes_per_pass = 0;  // the engine's pass size (automatic unless given)
  double batched_step_ms = 0;   // median
  double per_node_step_ms = 0;  // median
  double batched_images_per_s = 0;
  double per_node_images_per_s = 0;
  double speedup = 0;                   // engine / per-node
  // CPU: the engine with another pass size (third_nodes_per_pass: the cap of the automatic choice
  // when that took one node, else one node). CUDA: the engine's step captured once as a CUDA
  // graph and replayed.
  std::int64_t third_nodes_per_pass = 0;
  int engine_pass_workers = 1;  // passes side by side in the engine's mode (1: in turn)
  int third_pass_workers = 1;   // the same in the third mode
  double third_step_ms = 0;
  double third_images_per_s = 0;
};

// One full training step in each mode: forward, backward, local SGD + one Choco-SGD gossip round
// on a directed ring. Modes: the engine (nodes_per_pass nodes per forward/backward pass, grouped
// convolutions, batched optimizer and gossip), n separate models run in turn (the official code's
// approach), and a third: on the CPU the engine with the other end of the automatic pass size
// (models::automatic_nodes_per_pass), on a CUDA device the
// engine's step replayed as a CUDA graph. Prints a table through `progress` and returns the rows.
std::vector<ThroughputResult> run_throughput_bench(
    const ThroughputBenchOptions& options, const std::function<void(const std::string&)>& progress);

}  // namespace lpdt::exp
