#include "lpdt/exp/throughput_bench.h"

#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "lpdt/algo/decentralized_optimizer.h"
#include "lpdt/exp/bench_record.h"
#include "lpdt/core/cuda_step_graph.h"
#include "lpdt/core/error.h"
#include "lpdt/core/runtime.h"
#include "lpdt/exp/bench_stats.h"
#include "lpdt/exp/image_bench_model.h"
#include "lpdt/graph/factory.h"
#include "lpdt/graph/topology.h"
#include "lpdt/metrics/byte_ledger.h"
#include "lpdt/models/model.h"
#include "lpdt/models/node_batched_step.h"

namespace lpdt::exp {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

std::vector<ThroughputResult> run_throughput_bench(
    const ThroughputBenchOptions& options,
    const std::function<void(const std::string&)>& progress) {
  if (options.steps < 1 || options.batch_size < 1 || options.nodes.empty()) {
    throw ConfigError("bench: --steps, --batch and --nodes must be positive");
  }
  if (options.device != "cpu" && options.device != "cuda") {
    throw ConfigError("bench: --device must be cpu or cuda, got '" + options.device + "'");
  }
  // fp32, bf16 or int8: parse_precision's error names the accepted values.
  const quant::Precision precision = quant::parse_precision(options.precision);
  const bool on_gpu = options.device == "cuda";
  if (on_gpu && !torch::cuda::is_available()) {
    throw ConfigError(
        "bench: --device cuda, but no CUDA device is usable (a LibTorch without CUDA, or no GPU; "
        "README, 'CUDA build')");
  }
  const std::string& profiled = options.cuda_profiler_range;
  if (profiled != "none" && profiled != "engine" && profiled != "cuda-graph") {
    throw ConfigError("bench: --cuda-profiler-range must be none, engine or cuda-graph, got '" +
                      profiled + "'");
  }
  if (profiled != "none" && !on_gpu) {
    throw ConfigError("bench --cuda-profiler-range " + profiled +
                      ": brackets CUDA work; add --device cuda");
  }
  if (profiled != "none" && !cuda_profiler_range_available()) {
    throw ConfigError("bench --cuda-profiler-range: this build cannot start the CUDA profiler (a "
                      "build against a CUDA-enabled LibTorch with nvcc found: README, 'CUDA "
                      "build')");
  }
  const at::Device device = on_gpu ? at::Device(at::kCUDA) : at::Device(at::kCPU);
  if (on_gpu) at::globalContext().setBenchmarkCuDNN(true);  // static shapes: autotune once
  const RuntimeInfo runtime = configure_runtime(options.threads, on_gpu);
  models::ModelOptions model_options = image_bench_model(options);
  model_options.quant.precision = precision;
  const auto model = models::make_model(model_options);
  char line[256];
  std::snprintf(line, sizeof line,
                "lpdt bench: %s, batch %lld/node, %s on %s, median of %lld steps after %lld "
                "warm-up",
                model->name().c_str(), static_cast<long long>(options.batch_size),
                runtime.description().c_str(), options.device.c_str(),
                static_cast<long long>(options.steps),
                static_cast<long long>(options.warmup_steps));
  progress(line);
  progress(on_gpu ? "nodes  engine ms/step  img/s    per-node ms/step  img/s    speedup  "
                    "cuda-graph ms/step  img/s"
                  : "nodes  engine ms/step  img/s    per-node ms/step  img/s    speedup  "
                    "other-pass ms/step  img/s  (engine pass / other pass, nodes; workers)");

  std::vector<ThroughputResult> results;
  for (const std::int64_t n : options.nodes) {
    torch::manual_seed(0);
    const at::Tensor inputs =
        torch::randn({n, options.batch_size, options.channels, options.size, options.size})
            .to(device);
    const at::Tensor targets =
        torch::randint(0, 10, {n, options.batch_size}, torch::kLong).to(device);
    const auto topology =
        graph::make_topology(graph::TopologyOptions().name("directed-ring").num_nodes(n));
    const at::Tensor mixing = topology->at(0).mixing_matrix(at::kFloat).to(device);

    // nodes_per_pass >= 0: the node-batched engine (0 = all nodes in one pass);
    // -1: n separate models (own parameter tensors and buffers), one after the other.
    // use_graph: the engine's step captured as a CUDA graph after the warm-up, then replayed.
    // profile: this mode's timed steps run inside the CUDA profiler's range.
    // workers: the engine's passes side by side (run.pass_workers, resolved).
    auto measure = [&](std::int64_t nodes_per_pass, nn::ConvAlgorithm conv, bool use_graph,
                       bool profile, int workers) {
      at::Tensor x = model->init_params(1).to(device).unsqueeze(0).repeat({n, 1});
      std::vector<at::Tensor> buffers = model->init_buffers(n);
      for (auto& b : buffers) b = b.to(device);
      algo::DecentralizedOptimizer optimizer(algo::DecentralizedOptions(), n, model->layout(),
                                             device);
      metrics::ByteLedger ledger = optimizer.make_ledger();
      CudaStepGraph graph;
      std::vector<double> times;
      for (std::int64_t step = 0; step < options.warmup_steps + options.steps; ++step) {
        if (use_graph && step >= options.warmup_steps) {
          if (step == options.warmup_steps) {
            graph.capture([&] {
              const at::Tensor grad = models::compute_gradients(*model, x, buffers, inputs, targets,
                                                                nodes_per_pass, conv)
                                          .grad;
              torch::NoGradGuard no_grad;
              optimizer.step(x, grad, mixing, 0.01, step, ledger);
            });
            if (profile) cuda_profiler_start();
          }
          const auto start = Clock::now();
          graph.replay();
          cuda_synchronize();
          times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
          continue;
        }
        if (profile && step == options.warmup_steps) {
          cuda_synchronize();
          cuda_profiler_start();
        }
        const auto start = Clock::now();
        at::Tensor grad;
        if (nodes_per_pass >= 0) {
          grad = models::compute_gradients(*model, x, buffers, inputs, targets, nodes_per_pass,
                                           conv, {}, nullptr, workers)
                     .grad;
        } else {
          // The official code's shape of work: n separate models, one after the other.
          std::vector<at::Tensor> grads;
          for (std::int64_t i = 0; i < n; ++i) {
            at::Tensor xi = x.narrow(0, i, 1).clone().requires_grad_(true);
            std::vector<at::Tensor> node_buffers;
            for (const auto& b : buffers) node_buffers.push_back(b.narrow(0, i, 1));
            nn::Context ctx{&model->layout(), xi, &node_buffers, 1, true};
            models::node_batched_loss(model->forward(ctx, inputs.narrow(0, i, 1)),
                                      targets.narrow(0, i, 1))
                .backward();
            grads.push_back(xi.grad());
          }
          grad = at::cat(grads, 0);
        }
        {
          torch::NoGradGuard no_grad;
          optimizer.step(x, grad, mixing, 0.01, step, ledger);
        }
        if (on_gpu) cuda_synchronize();
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        if (step >= options.warmup_steps) times.push_back(ms);
      }
      if (profile) {
        cuda_synchronize();
        cuda_profiler_stop();
      }
      return median(times);
    };

    ThroughputResult r;
    r.nodes = n;
    const double images = static_cast<double>(n * options.batch_size);
    const std::int64_t engine_pass =
        options.nodes_per_pass > 0
            ? std::min(options.nodes_per_pass, n)  // a pass holds at most every node
            : models::automatic_nodes_per_pass(*model, inputs.narrow(0, 0, 1), n, on_gpu);
    // On the CPU the third column is the other end of the automatic choice's range: the capped
    // grouped pass when the engine took one node per pass, one node per pass otherwise.
    const std::int64_t other_pass =
        engine_pass == 1 ? std::min(n, models::kCpuNodesPerPass) : std::int64_t{1};
    r.engine_nodes_per_pass = engine_pass;
    r.third_nodes_per_pass = on_gpu ? engine_pass : other_pass;
    const auto workers_for = [&](std::int64_t pass) {
      return models::resolve_pass_workers(options.pass_workers, *model, (n + pass - 1) / pass,
                                          on_gpu, runtime.intra_op_threads);
    };
    r.engine_pass_workers = workers_for(engine_pass);
    r.third_pass_workers = workers_for(r.third_nodes_per_pass);
    r.batched_step_ms = measure(engine_pass, nn::ConvAlgorithm::kGrouped, false,
                                profiled == "engine", r.engine_pass_workers);
    r.per_node_step_ms = measure(-1, nn::ConvAlgorithm::kPerNode, false, false, 1);
    try {
      r.third_step_ms = on_gpu ? measure(engine_pass, nn::ConvAlgorithm::kGrouped, true,
                                         profiled == "cuda-graph", 1)
                               : measure(other_pass, nn::ConvAlgorithm::kGrouped, false, false,
                                         r.third_pass_workers);
    } catch (const c10::Error& e) {
      // A step that cannot be captured (stochastic-rounding draws keyed on the host's step
      // counter copy a host tensor per step): reported, the other modes still stand.
      progress(std::string("cuda-graph mode unavailable for this step: ") +
               e.what_without_backtrace());
      r.third_step_ms = std::numeric_limits<double>::quiet_NaN();
    }
    r.batched_images_per_s = images / (r.batched_step_ms / 1000.0);
    r.per_node_images_per_s = images / (r.per_node_step_ms / 1000.0);
    r.third_images_per_s = images / (r.third_step_ms / 1000.0);
    r.speedup = r.per_node_step_ms / r.batched_step_ms;
    std::snprintf(line, sizeof line,
                  "%5lld  %15.1f  %7.0f  %16.1f  %7.0f  %6.2fx  %14.1f  %7.0f  (%lld / %lld; %d / %d)",
                  static_cast<long long>(n), r.batched_step_ms, r.batched_images_per_s,
                  r.per_node_step_ms, r.per_node_images_per_s, r.speedup, r.third_step_ms,
                  r.third_images_per_s, static_cast<long long>(r.engine_nodes_per_pass),
                  static_cast<long long>(r.third_nodes_per_pass), r.engine_pass_workers,
                  r.third_pass_workers);
    progress(line);
    results.push_back(r);
  }

  if (!options.json_path.empty()) {
    nlohmann::json j;
    j["model"] = model->name();
    j["batch_per_node"] = options.batch_size;
    j["engine_nodes_per_pass"] = options.nodes_per_pass;  // 0: automatic
    j["pass_workers"] = options.pass_workers;             // 0: automatic
    j["options"] = image_bench_options(options);
    j["device"] = options.device;
    j["precision"] = options.precision;
    j["norm"] = options.norm;
    j["third_mode"] = on_gpu ? "cuda-graph" : "engine-other-pass-size";
    for (const auto& r : results) {
      j["rows"].push_back({{"nodes", r.nodes},
                           {"engine_nodes_per_pass", r.engine_nodes_per_pass},
                           {"third_nodes_per_pass", r.third_nodes_per_pass},
                           {"engine_pass_workers", r.engine_pass_workers},
                           {"third_pass_workers", r.third_pass_workers},
                           {"batched_step_ms", r.batched_step_ms},
                           {"per_node_step_ms", r.per_node_step_ms},
                           {"batched_images_per_s", r.batched_images_per_s},
                           {"per_node_images_per_s", r.per_node_images_per_s},
                           {"speedup", r.speedup},
                           {"third_step_ms", r.third_step_ms},
                           {"third_images_per_s", r.third_images_per_s}});
    }
    write_bench_json(options.json_path, std::move(j), runtime, "bench");
  }
  return results;
}

}  // namespace lpdt::exp
