#include "lpdt/exp/scaling_bench.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "lpdt/algo/decentralized_optimizer.h"
#include "lpdt/exp/bench_record.h"
#include "lpdt/core/error.h"
#include "lpdt/core/runtime.h"
#include "lpdt/exp/bench_stats.h"
#include "lpdt/exp/checkpoint.h"
#include "lpdt/exp/evaluation.h"
#include "lpdt/exp/image_bench_model.h"
#include "lpdt/graph/factory.h"
#include "lpdt/graph/topology.h"
#include "lpdt/metrics/byte_ledger.h"
#include "lpdt/models/model.h"
#include "lpdt/models/node_batched_step.h"

namespace lpdt::exp {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kMiB = 1024.0 * 1024.0;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Writes the state as the trainer does at an epoch's end into a folder of TMPDIR, reads it back,
// and fills r's checkpoint figures. The folder is removed.
void time_checkpoint(const at::Tensor& x, const std::vector<at::Tensor>& buffers,
                     algo::DecentralizedOptimizer& optimizer, const metrics::ByteLedger& ledger,
                     ScalingResult& r) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("lpdt-bench-checkpoint-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / kCheckpointFile;
  const double peak_before = peak_resident_bytes();
  try {
    TrainingState state;
    state.epochs_done = 1;
    state.params = x;
    state.buffers = buffers;
    for (const auto& [name, tensor] : optimizer.state()) {
      state.optimizer[name] = tensor.dim() == 0 ? tensor.clone() : tensor;
    }
    state.torch_rng_state = at::detail::getDefaultCPUGenerator().get_state();
    state.ledger = ledger.to_json();
    state.epochs = nlohmann::json::array();
    state.config = nlohmann::json::object();
    auto start = Clock::now();
    write_checkpoint(file, state);
    r.checkpoint_write_ms = ms_since(start);
    const double peak_after_write = peak_resident_bytes();
    r.checkpoint_write_peak_rss_growth_mib = (peak_after_write - peak_before) / kMiB;
    r.checkpoint_mib = static_cast<double>(fs::file_size(file)) / kMiB;
    start = Clock::now();
    const TrainingState read = read_checkpoint(file);
    r.checkpoint_read_ms = ms_since(start);
    r.checkpoint_read_peak_rss_growth_mib = (peak_resident_bytes() - peak_after_write) / kMiB;
    LPDT_CHECK(read.params.sizes() == x.sizes(), "bench --scaling: the checkpoint read back differs");
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
    throw;
  }
  std::error_code ignored;
  fs::remove_all(dir, ignored);
}

// Fills r's evaluation figures: the first min(n, kEvalBenchNodes) nodes of x evaluated over a
// synthetic test set, in turn and on `workers`, the two alternating round by round so that a load
// that moves over seconds slows both alike.
void time_evaluation(const models::Model& model, const at::Tensor& x,
                     const std::vector<at::Tensor>& buffers, const ScalingBenchOptions& options,
                     int workers, ScalingResult& r) {
  const std::int64_t m = std::min<std::int64_t>(x.size(0), kEvalBenchNodes);
  data::Dataset test;
  test.name = "synthetic";
  test.images = torch::randint(0, 256, {kEvalBenchSamples, options.channels, options.size,
                                        options.size}, torch::kUInt8);
  test.labels = torch::randint(0, 10, {kEvalBenchSamples}, torch::kLong);
  test.num_classes = 10;
  test.mean.assign(static_cast<std::size_t>(options.channels), 0.5);
  test.std.assign(static_cast<std::size_t>(options.channels), 0.25);
  const data::EvalBatches batches(test, 500);
  const at::Tensor params = x.detach().narrow(0, 0, m);
  std::vector<at::Tensor> node_buffers;
  for (const auto& b : buffers) node_buffers.push_back(b.narrow(0, 0, m));
  const auto ms_per_node = [&](int w) {
    const auto start = Clock::now();
    node_accuracies(model, params, node_buffers, batches, w);
    return ms_since(start) / static_cast<double>(m);
  };
  std::vector<double> in_turn, on_workers;
  for (int round = 0; round < kEvalBenchRounds; ++round) {
    in_turn.push_back(ms_per_node(1));
    on_workers.push_back(workers > 1 ? ms_per_node(workers) : in_turn.back());
  }
  r.eval_workers = workers;
  r.eval_ms_per_node_in_turn = median(in_turn);
  r.eval_ms_per_node = median(on_workers);
}

}  // namespace

std::vector<ScalingResult> run_scaling_bench(
    const ScalingBenchOptions& options, const std::function<void(const std::string&)>& progress) {
  if (options.steps < 1 || options.batch_size < 1 || options.nodes.empty()) {
    throw ConfigError("bench --scaling: --steps, --batch and --nodes must be positive");
  }
  for (const std::int64_t n : options.nodes) {
    if (n < 1)
      throw ConfigError("bench --scaling: --nodes must be positive, got " + std::to_string(n));
  }
  const RuntimeInfo runtime = configure_runtime(options.threads, /*on_cuda=*/false);
  const auto model = models::make_model(image_bench_model(options));
  char line[384];
  std::snprintf(line, sizeof line,
                "lpdt bench --scaling: %s%s (%lld params/node), batch %lld/node, %s, median "
                "of %lld steps after %lld warm-up",
                model->name().c_str(), image_bench_norm_text(options).c_str(),
                static_cast<long long>(model->num_params()),
                static_cast<long long>(options.batch_size), runtime.description().c_str(),
                static_cast<long long>(options.steps),
                static_cast<long long>(options.warmup_steps));
  progress(line);
  progress(
      "nodes  ms/step  ms/node-step    img/s  state MiB  peak RSS MiB  faults/step  heap "
      "growth KiB/step  warm-up faults/step  checkpoint MiB  write ms (sync)  write peak RSS "
      "+MiB  read back ms  read peak RSS +MiB  eval ms/node: in turn  on workers (n)");

  std::vector<ScalingResult> results;
  for (const std::int64_t n : options.nodes) {
    torch::manual_seed(0);
    const at::Tensor inputs =
        torch::randn({n, options.batch_size, options.channels, options.size, options.size});
    const at::Tensor targets = torch::randint(0, 10, {n, options.batch_size}, torch::kLong);
    const auto topology =
        graph::make_topology(graph::TopologyOptions().name("directed-ring").num_nodes(n));
    const at::Tensor mixing = topology->at(0).mixing_matrix(at::kFloat);
    at::Tensor x = model->init_params(1).unsqueeze(0).repeat({n, 1});
    std::vector<at::Tensor> buffers = model->init_buffers(n);
    algo::DecentralizedOptimizer optimizer(
        algo::DecentralizedOptions().algorithm("choco").momentum(0.9).nesterov(true), n,
        model->layout());
    metrics::ByteLedger ledger = optimizer.make_ledger();
    const std::int64_t pass =
        models::automatic_nodes_per_pass(*model, inputs.narrow(0, 0, 1), n, /*on_gpu=*/false);
    // The trainer's automatic choice (run.pass_workers = 0).
    const int workers = models::automatic_pass_workers(*model, (n + pass - 1) / pass,
                                                       /*on_gpu=*/false, runtime.intra_op_threads);

    std::vector<double> times;
    // The warm-up steps' faults are counted apart: they are the first touches of the step's
    // memory, which glibc's heap takes a few steps to settle into (docs/benchmarks.md, scaling,
    // 2026-11-28, later); the timed steps' count is the steady state.
    const long faults_at_start = minor_page_faults();
    long faults_before = faults_at_start;
    double heap_before = heap_bytes_in_use();
    for (std::int64_t step = 0; step < options.warmup_steps + options.steps; ++step) {
      if (step == options.warmup_steps) {
        faults_before = minor_page_faults();
        heap_before = heap_bytes_in_use();
      }
      const auto start = Clock::now();
      const at::Tensor grad = models::compute_gradients(*model, x, buffers, inputs, targets, pass,
                                                        nn::ConvAlgorithm::kGrouped, {}, nullptr,
                                                        workers)
                                  .grad;
      {
        torch::NoGradGuard no_grad;
        optimizer.step(x, grad, mixing, 0.01, step, ledger);
      }
      if (step >= options.warmup_steps) {
        times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
      }
    }
    ScalingResult r;
    r.nodes = n;
    r.nodes_per_pass = pass;
    r.pass_workers = workers;
    r.step_ms = median(times);
    r.ms_per_node_step = r.step_ms / static_cast<double>(n);
    r.images_per_s = static_cast<double>(n * options.batch_size) / (r.step_ms / 1000.0);
    const double steps = static_cast<double>(options.steps);
    r.page_faults_per_step = static_cast<double>(minor_page_faults() - faults_before) / steps;
    r.warmup_page_faults_per_step =
        options.warmup_steps > 0 ? static_cast<double>(faults_before - faults_at_start) /
                                       static_cast<double>(options.warmup_steps)
                                 : 0.0;
    r.heap_growth_per_step_kib = (heap_bytes_in_use() - heap_before) / 1024.0 / steps;
    r.state_mib = heap_bytes_in_use() / kMiB;
    r.peak_rss_mib = peak_resident_bytes() / kMiB;
    time_checkpoint(x, buffers, optimizer, ledger, r);
    time_evaluation(*model, x, buffers, options,
                    models::evaluation_workers(0, *model, /*on_gpu=*/false, runtime.intra_op_threads), r);
    std::snprintf(line, sizeof line,
                  "%5lld  %7.1f  %12.3f  %7.0f  %9.1f  %12.1f  %11.0f  %20.1f  %19.0f  %14.1f  "
                  "%14.1f  %19.1f  %13.1f  %18.1f  %21.2f  %10.2f (%d)",
                  static_cast<long long>(n), r.step_ms, r.ms_per_node_step, r.images_per_s,
                  r.state_mib, r.peak_rss_mib, r.page_faults_per_step, r.heap_growth_per_step_kib,
                  r.warmup_page_faults_per_step, r.checkpoint_mib, r.checkpoint_write_ms,
                  r.checkpoint_write_peak_rss_growth_mib, r.checkpoint_read_ms,
                  r.checkpoint_read_peak_rss_growth_mib, r.eval_ms_per_node_in_turn,
                  r.eval_ms_per_node, r.eval_workers);
    progress(line);
    results.push_back(r);
  }

  if (!options.json_path.empty()) {
    nlohmann::json j;
    j["model"] = model->name();
    j["params_per_node"] = model->num_params();
    j["batch_per_node"] = options.batch_size;
    j["options"] = image_bench_options(options);
    for (const auto& r : results) {
      j["rows"].push_back({{"nodes", r.nodes},
                           {"nodes_per_pass", r.nodes_per_pass},
                           {"pass_workers", r.pass_workers},
                           {"step_ms", r.step_ms},
                           {"ms_per_node_step", r.ms_per_node_step},
                           {"images_per_s", r.images_per_s},
                           {"state_mib", r.state_mib},
                           {"peak_rss_mib", r.peak_rss_mib},
                           {"page_faults_per_step", r.page_faults_per_step},
                           {"heap_growth_per_step_kib", r.heap_growth_per_step_kib},
                           {"warmup_page_faults_per_step", r.warmup_page_faults_per_step},
                           {"checkpoint_mib", r.checkpoint_mib},
                           {"checkpoint_write_ms", r.checkpoint_write_ms},
                           {"checkpoint_read_ms", r.checkpoint_read_ms},
                           {"checkpoint_write_peak_rss_growth_mib",
                            r.checkpoint_write_peak_rss_growth_mib},
                           {"checkpoint_read_peak_rss_growth_mib",
                            r.checkpoint_read_peak_rss_growth_mib},
                           {"eval_workers", r.eval_workers},
                           {"eval_ms_per_node_in_turn", r.eval_ms_per_node_in_turn},
                           {"eval_ms_per_node", r.eval_ms_per_node}});
    }
    write_bench_json(options.json_path, std::move(j), runtime, "bench --scaling");
  }
  return results;
}

}  // namespace lpdt::exp
