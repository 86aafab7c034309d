#include "lpdt/exp/precision_bench.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "lpdt/algo/decentralized_optimizer.h"
#include "lpdt/exp/bench_record.h"
#include "lpdt/core/error.h"
#include "lpdt/core/fma_peak.h"
#include "lpdt/core/runtime.h"
#include "lpdt/exp/bench_stats.h"
#include "lpdt/graph/factory.h"
#include "lpdt/graph/topology.h"
#include "lpdt/metrics/byte_ledger.h"
#include "lpdt/models/model.h"
#include "lpdt/models/node_batched_step.h"

namespace lpdt::exp {
namespace {

using Clock = std::chrono::steady_clock;

quant::QuantOptions options_for(const std::string& mode) {
  quant::QuantOptions q;
  if (mode == "fp32") return q;
  if (mode == "bf16") {
    q.precision = quant::Precision::kBf16;
    return q;
  }
  q.precision = quant::Precision::kInt8;
  // "-bf16wgrad": the weight gradients in bfloat16 (quant.weight_grad = "bf16").
  const std::string suffix = "-bf16wgrad";
  std::string base = mode;
  if (base.size() > suffix.size() && base.ends_with(suffix)) {
    q.weight_grad = quant::WeightGrad::kBf16;
    base.resize(base.size() - suffix.size());
  }
  if (base == "int8-simulated") return q;
  if (base == "int8-integer") {
    q.backend = quant::QuantBackend::kInteger;
    return q;
  }
  throw ConfigError("bench --modes: '" + mode +
                    "' is not a mode: expected fp32, bf16, int8-simulated or int8-integer, the "
                    "int8 modes optionally with -bf16wgrad (bfloat16 weight gradients)");
}

}  // namespace

std::vector<PrecisionResult> run_precision_bench(
    const PrecisionBenchOptions& options, const std::function<void(const std::string&)>& progress) {
  if (options.steps < 1 || options.batch_size < 1 || options.nodes.empty() ||
      options.modes.empty()) {
    throw ConfigError("bench: --steps, --batch, --nodes and --modes must be non-empty/positive");
  }
  for (const std::string& mode : options.modes) options_for(mode);  // every mode, before timing
  const RuntimeInfo runtime = configure_runtime(options.threads);
  char line[256];
  std::snprintf(
      line, sizeof line,
      "lpdt bench --precision: %s depth %lld, norm %s, %lldx%lldx%lld inputs, batch %lld/node, "
      "%s, median of %lld steps after %lld warm-up",
      options.arch.c_str(), static_cast<long long>(options.depth), options.norm.c_str(),
      static_cast<long long>(options.channels), static_cast<long long>(options.size),
      static_cast<long long>(options.size), static_cast<long long>(options.batch_size),
      runtime.description().c_str(), static_cast<long long>(options.steps),
      static_cast<long long>(options.warmup_steps));
  progress(line);
  if (options.profile_rows > 0) {
    std::snprintf(line, sizeof line,
                  "float32 fused multiply-add peak of these %d threads, measured: %.0f GFLOP/s",
                  runtime.intra_op_threads, measured_fma_peak_gflops(runtime.intra_op_threads));
    progress(line);
  }
  progress(
      "nodes  pass  workers  mode             ms/step    img/s  vs fp32  activations MiB/node  "
      "vs fp32");

  std::vector<PrecisionResult> results;
  for (const std::int64_t n : options.nodes) {
    torch::manual_seed(0);
    const at::Tensor inputs =
        torch::randn({n, options.batch_size, options.channels, options.size, options.size});
    const at::Tensor targets = torch::randint(0, 10, {n, options.batch_size}, torch::kLong);
    const auto topology =
        graph::make_topology(graph::TopologyOptions().name("directed-ring").num_nodes(n));
    const at::Tensor mixing = topology->at(0).mixing_matrix(at::kFloat);
    std::vector<double> fp32_ms;  // per --pass-workers value
    double fp32_mib = 0;
    for (const std::string& mode : options.modes) {
      models::ModelOptions model_options;
      model_options.arch = options.arch;
      model_options.depth = options.depth;
      model_options.norm = options.norm;
      model_options.in_channels = options.channels;
      model_options.height = model_options.width = options.size;
      model_options.quant = options_for(mode);
      const auto model = models::make_model(model_options);
      const std::int64_t pass = options.nodes_per_pass > 0 ? std::min(options.nodes_per_pass, n)
                                                           : models::automatic_nodes_per_pass(
                                                                 *model, inputs.narrow(0, 0, 1), n,
                                                                 /*on_gpu=*/false);
      // Passes side by side on one-thread workers (run.pass_workers), as the trainer resolves it;
      // several counts alternate step by step.
      std::vector<int> worker_counts;
      for (const int requested : options.pass_workers) {
        worker_counts.push_back(models::resolve_pass_workers(requested, *model, (n + pass - 1) / pass,
                                                             /*on_gpu=*/false,
                                                             runtime.intra_op_threads));
      }
      const auto counts = static_cast<std::int64_t>(worker_counts.size());
      at::Tensor x = model->init_params(1).unsqueeze(0).repeat({n, 1});
      std::vector<at::Tensor> buffers = model->init_buffers(n);
      algo::DecentralizedOptimizer optimizer(algo::DecentralizedOptions(), n, model->layout());
      metrics::ByteLedger ledger = optimizer.make_ledger();
      std::vector<std::vector<double>> times(worker_counts.size());
      std::vector<double> held;
      // What a pass holds for its backward: the heap's growth over its forward, per node.
      double heap_before_forward = 0;
      models::PassObserver observer;
      observer.before_forward = [&](std::int64_t) { heap_before_forward = heap_bytes_in_use(); };
      observer.after_forward = [&](std::int64_t nodes) {
        held.push_back((heap_bytes_in_use() - heap_before_forward) / static_cast<double>(nodes));
      };
      const auto run_step = [&](std::int64_t step, int workers) {
        // The trainer's CPU configuration: `pass` nodes per forward/backward pass, one grouped
        // kernel per layer for a pass's nodes. What a pass holds is measured in steps run in
        // turn (passes side by side share the heap): with workers only, the first step, a
        // warm-up step unless --warmup is 0.
        const bool observed = workers == 1 || step == 0;
        const at::Tensor grad =
            models::compute_gradients(*model, x, buffers, inputs, targets, pass,
                                      nn::ConvAlgorithm::kGrouped, quant::DrawKey{1, step, 0},
                                      observed ? &observer : nullptr, observed ? 1 : workers)
                .grad;
        torch::NoGradGuard no_grad;
        optimizer.step(x, grad, mixing, 0.01, step, ledger);
      };
      const std::int64_t timed_end = options.warmup_steps + options.steps * counts;
      for (std::int64_t step = 0; step < timed_end; ++step) {
        const std::size_t which = static_cast<std::size_t>(step % counts);
        const auto start = Clock::now();
        run_step(step, worker_counts[which]);
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        if (step >= options.warmup_steps) times[which].push_back(ms);
      }
      if (fp32_ms.empty()) fp32_ms.assign(worker_counts.size(), 0.0);
      for (std::size_t which = 0; which < worker_counts.size(); ++which) {
        PrecisionResult r;
        r.nodes = n;
        r.nodes_per_pass = pass;
        r.pass_workers = worker_counts[which];
        r.mode = mode;
        r.step_ms = median(times[which]);
        r.images_per_s = static_cast<double>(n * options.batch_size) / (r.step_ms / 1000.0);
        r.activation_mib = median(held) / (1024.0 * 1024.0);
        if (mode == "fp32") fp32_ms[which] = r.step_ms, fp32_mib = r.activation_mib;
        r.speedup_vs_fp32 = fp32_ms[which] > 0 ? fp32_ms[which] / r.step_ms : 0;
        r.activation_ratio_vs_fp32 = fp32_mib > 0 ? fp32_mib / r.activation_mib : 0;
        // Ratios need fp32 in --modes, measured before this mode: "-" otherwise.
        const auto ratio = [](double value) {
          char text[16];
          if (value > 0) {
            std::snprintf(text, sizeof text, "%6.2fx", value);
          } else {
            std::snprintf(text, sizeof text, "%7s", "-");
          }
          return std::string(text);
        };
        std::snprintf(line, sizeof line, "%5lld  %4lld  %7d  %-15s  %7.1f  %7.0f  %s  %21.2f  %s",
                      static_cast<long long>(n), static_cast<long long>(pass), r.pass_workers,
                      mode.c_str(), r.step_ms, r.images_per_s, ratio(r.speedup_vs_fp32).c_str(),
                      r.activation_mib, ratio(r.activation_ratio_vs_fp32).c_str());
        progress(line);
        results.push_back(r);
      }
      PrecisionResult& r = results.back();
      if (options.profile_rows > 0) {
        // The profiled steps run as the last row's timed ones did; with pass workers the
        // observer watches them too (operator_profile.h) and the rows are threads' time.
        const int workers = r.pass_workers;
        progress("  (profiled: " + std::to_string(options.steps) + " more steps, " +
                 (workers > 1 ? "their passes on " + std::to_string(workers) +
                                    " workers: rows are the threads' time, shares of their sum)"
                              : std::string("their passes in turn on this thread)")));
        r.profile = profile_operators(
            [&] {
              for (std::int64_t step = timed_end; step < timed_end + options.steps; ++step) {
                run_step(step, workers);
              }
            },
            options.steps);
        for (const std::string& row : format_operator_profile(r.profile, options.profile_rows)) {
          progress(row);
        }
      }
    }
  }
  if (!options.json_path.empty()) {
    nlohmann::json j;
    j["arch"] = options.arch;
    j["depth"] = options.depth;
    j["batch_per_node"] = options.batch_size;
    j["options"] = image_bench_options(options);
    j["options"]["nodes_per_pass"] = options.nodes_per_pass;  // 0: automatic
    j["options"]["pass_workers"] = options.pass_workers;  // 0: automatic; several: alternating
    j["options"]["modes"] = options.modes;
    j["options"]["profile_rows"] = options.profile_rows;
    for (const auto& r : results) {
      j["rows"].push_back({{"nodes", r.nodes},
                           {"nodes_per_pass", r.nodes_per_pass},
                           {"pass_workers", r.pass_workers},
                           {"mode", r.mode},
                           {"step_ms", r.step_ms},
                           {"images_per_s", r.images_per_s},
                           // null without an fp32 row to compare with (the table's "-")
                           {"speedup_vs_fp32", r.speedup_vs_fp32 > 0
                                                   ? nlohmann::json(r.speedup_vs_fp32)
                                                   : nlohmann::json()},
                           {"activation_mib", r.activation_mib},
                           {"activation_ratio_vs_fp32",
                            r.activation_ratio_vs_fp32 > 0
                                ? nlohmann::json(r.activation_ratio_vs_fp32)
                                : nlohmann::json()}});
      if (r.profile.operators.empty()) continue;
      nlohmann::json& profile = j["rows"].back()["profile"];
      profile["wall_ms_per_step"] = r.profile.wall_ms_per_step;
      profile["outside_ms_per_step"] = r.profile.outside_ms_per_step;
      for (const auto& op : r.profile.operators) {
        profile["operators"].push_back({{"name", op.name},
                                        {"self_ms_per_step", op.self_ms_per_step},
                                        {"total_ms_per_step", op.total_ms_per_step},
                                        {"calls_per_step", op.calls_per_step}});
      }
    }
    write_bench_json(options.json_path, std::move(j), runtime, "bench --precision");
  }
  return results;
}

}  // namespace lpdt::exp
