#pragma once
// `lpdt bench --scaling`: how the node-batched engine's step time and memory grow with the number
// of nodes in one process. One full training step per measurement, as the trainer runs it:
// forward and backward in passes of the automatic size (grouped convolutions), local SGD with
// Nesterov momentum and one Choco-SGD round on a directed ring (sparse mixing on the CPU). Then
// one checkpoint of that state, written and read back, and the per-node evaluation of its models.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lpdt::exp {

struct ScalingBenchOptions {
  std::string arch = "lenet5";
  std::int64_t depth = 20;  // ResNet only
  std::string norm = "evonorm";  // model.norm's names
  std::vector<std::int64_t> nodes = {1, 8, 64, 256, 1024};
  std::int64_t batch_size = 32;  // per node
  std::int64_t steps = 3;        // timed steps per node count (median reported)
  std::int64_t warmup_steps = 1;
  int threads = 0;
  std::int64_t channels = 1;
  std::int64_t size = 28;
  std::string json_path;
};

struct ScalingResult {
  std::int64_t nodes = 0;
  std::int64_t nodes_per_pass = 0;  // automatic (run.nodes_per_pass = 0)
  int pass_workers = 1;             // automatic (run.pass_workers = 0)
  double step_ms = 0;               // median
  double ms_per_node_step = 0;  // step_ms / nodes: flat when cost grows linearly
  double images_per_s = 0;
  double state_mib = 0;     // heap in use after the timed steps: parameters, buffers, data
  double peak_rss_mib = 0;  // the process's peak resident set so far
  double page_faults_per_step = 0;         // minor faults per timed step: the steady state
  double heap_growth_per_step_kib = 0;     // ~0 when steps reuse their memory
  double warmup_page_faults_per_step = 0;  // per warm-up step (first touches); 0 without warm-up
  // One checkpoint of the state after the timed steps (every node's parameters, buffers and
  // optimizer state, as the trainer writes it at an epoch's end), written and synced to a
  // temporary folder in TMPDIR (default /tmp), then read back.
  double checkpoint_mib = 0;       // the file's size
  double checkpoint_write_ms = 0;  // exp::write_checkpoint, fsync and rename included
  double checkpoint_read_ms = 0;   // exp::read_checkpoint
  // How far the write, then the read, raised the process's peak resident set: a lower bound on
  // the memory each takes beyond the training state (0 where an earlier peak was higher; the
  // read's counts only what rose above the write's).
  double checkpoint_write_peak_rss_growth_mib = 0;
  double checkpoint_read_peak_rss_growth_mib = 0;
  // Per-node evaluation (exp::node_accuracies, as eval.per_node runs it) of the first
  // min(nodes, kEvalBenchNodes) nodes over kEvalBenchSamples synthetic test images in batches of
  // 500, passes in turn and on the automatic evaluation workers, alternating over
  // kEvalBenchRounds rounds: the median, per node evaluated.
  int eval_workers = 1;
  double eval_ms_per_node_in_turn = 0;
  double eval_ms_per_node = 0;  // on eval_workers (equal to in turn when it is 1)
};
constexpr std::int64_t kEvalBenchNodes = 16;
constexpr std::int64_t kEvalBenchSamples = 1000;
constexpr int kEvalBenchRounds = 3;

std::vector<ScalingResult> run_scaling_bench(
    const ScalingBenchOptions& options, const std::function<void(const std::string&)>& progress);

}  // namespace lpdt::exp
