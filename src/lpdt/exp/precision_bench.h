#pragma once
// `lpdt bench --precision`: one model trained at fp32, int8 simulated and int8 integer, measured
// in the same run on the same data, the modes' steps alternating (issue: ratios from one run,
// since the machines are shared and their load moves over seconds):
// the median step time and, per node, the memory held by the autograd graph between forward and
// backward (the saved activations of a pass divided by its nodes), measured from the allocator
// (glibc mallinfo2), not estimated. Passes take as many nodes as the trainer's.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lpdt/exp/bench_stats.h"
#include "lpdt/exp/operator_profile.h"

namespace lpdt::exp {

struct PrecisionBenchOptions {
  std::string arch = "resnet";
  std::int64_t depth = 20;
  std::string norm = "evonorm";  // model.norm's names; int8 modes take its 8-bit version
  std::vector<std::int64_t> nodes = {1, 8};
  std::int64_t batch_size = 32;  // per node
  std::int64_t steps = 5;
  std::int64_t warmup_steps = 1;
  int threads = 0;
  // Nodes per forward/backward pass; 0 = the trainer's automatic choice (run.nodes_per_pass = 0).
  std::int64_t nodes_per_pass = 0;
  // Passes side by side on this many worker threads (run.pass_workers: 0 = automatic, 1 = in
  // turn). Several values: a row each, their steps alternating in one process (step s runs value
  // s mod count), so that a busy machine slows them alike.
  std::vector<int> pass_workers = {0};
  std::int64_t channels = 1;
  std::int64_t size = 28;
  std::vector<std::string> modes = {"fp32", "bf16", "int8-simulated", "int8-integer"};
  std::string json_path;
  // > 0: after the timed steps, run as many again observing LibTorch's operator ranges and print
  // this many operators by self time per step (operator_profile.h).
  std::size_t profile_rows = 0;
  // Called before each warm-up and timed step with its mode, step index and worker count (the
  // order the steps ran in; tests check it). Unset: nothing.
  std::function<void(const std::string& mode, std::int64_t step, int workers)> before_step;
};

struct PrecisionResult {
  std::int64_t nodes = 0;
  std::int64_t nodes_per_pass = 0;  // nodes in one forward/backward pass
  int pass_workers = 1;             // passes side by side (1: in turn)
  std::string mode;
  double step_ms = 0;  // median over timed steps
  std::vector<double> step_ms_samples;  // every timed step, in the order they ran
  double images_per_s = 0;
  double speedup_vs_fp32 = 0;           // fp32 step time / this step time (0 without fp32)
  double activation_mib = 0;            // held between forward and backward, per node of a pass
  double activation_ratio_vs_fp32 = 0;  // fp32 activation memory / this one
  // fp32's step / this mode's step in each timed round (the modes' steps of a round run one
  // after the other), over the rounds. A load that moves between rounds slows both steps of a
  // round and cancels in its ratio, where the ratio of the medians takes fp32's median from
  // some rounds and this mode's from others. All 0 without fp32 in --modes.
  Quartiles round_speedup_vs_fp32;
  OperatorProfile profile;              // empty unless profile_rows > 0
};

std::vector<PrecisionResult> run_precision_bench(
    const PrecisionBenchOptions& options, const std::function<void(const std::string&)>& progress);

}  // namespace lpdt::exp
