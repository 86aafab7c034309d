#include "lpdt/exp/precision_bench.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "lpdt/algo/decentralized_optimizer.h"
#include "lpdt/core/error.h"
#include "lpdt/core/fma_peak.h"
#include "lpdt/core/pass_workers.h"
#include "lpdt/core/runtime.h"
#include "lpdt/exp/bench_record.h"
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

// The model one mode measures.
models::ModelOptions model_options_for(const PrecisionBenchOptions& options,
                                       const std::string& mode) {
  models::ModelOptions model_options = image_bench_model(options);
  model_options.quant = options_for(mode);
  return model_options;
}

}  // namespace

std::vector<PrecisionResult> run_precision_bench(
    const PrecisionBenchOptions& options, const std::function<void(const std::string&)>& progress) {
  if (options.steps < 1 || options.batch_size < 1 || options.nodes.empty() ||
      options.modes.empty()) {
    throw ConfigError("bench: --steps, --batch, --nodes and --modes must be non-empty/positive");
  }
  // Every mode, and the model's fit to the inputs (a ConfigError naming the input size), before
  // anything is printed or timed.
  for (const std::string& mode : options.modes) options_for(mode);
  const std::string model_name = models::make_model(image_bench_model(options))->name();
  const RuntimeInfo runtime = configure_runtime(options.threads, /*on_cuda=*/false);
  char line[384];
  std::snprintf(
      line, sizeof line,
      "lpdt bench --precision: %s%s, %lldx%lldx%lld inputs, batch %lld/node, "
      "%s, median of %lld steps after %lld warm-up, the modes' steps alternating",
      model_name.c_str(), image_bench_norm_text(options).c_str(),
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
  // The mode column as wide as the longest mode ("int8-integer-bf16wgrad"), at least 15.
  int mode_width = 15;
  for (const std::string& mode : options.modes) {
    mode_width = std::max(mode_width, static_cast<int>(mode.size()));
  }
  std::snprintf(line, sizeof line,
                "nodes  pass  workers  %-*s  ms/step    img/s  vs fp32  activations MiB/node  "
                "vs fp32  vs fp32 by round: median [quartiles]",
                mode_width, "mode");
  progress(line);

  std::vector<PrecisionResult> results;
  for (const std::int64_t n : options.nodes) {
    torch::manual_seed(0);
    const at::Tensor inputs =
        torch::randn({n, options.batch_size, options.channels, options.size, options.size});
    const at::Tensor targets = torch::randint(0, 10, {n, options.batch_size}, torch::kLong);
    const auto topology =
        graph::make_topology(graph::TopologyOptions().name("directed-ring").num_nodes(n));
    const at::Tensor mixing = topology->at(0).mixing_matrix(at::kFloat);
    // Every mode's model, optimizer and state made first; then their steps alternate, mode after
    // mode and worker count after worker count, so that the machine's load, which moves over
    // seconds on shared machines, slows all of them alike and the ratios hold within one run.
    struct ModeRun {
      std::string mode;
      std::unique_ptr<models::Model> model;
      std::int64_t pass = 1;
      std::vector<int> worker_counts;
      at::Tensor x;
      std::vector<at::Tensor> buffers;
      std::unique_ptr<algo::DecentralizedOptimizer> optimizer;
      std::unique_ptr<metrics::ByteLedger> ledger;
      std::vector<std::vector<double>> times;  // per worker count
      std::vector<double> held;
      double heap_before_forward = 0;
      models::PassObserver observer;
    };
    std::vector<std::unique_ptr<ModeRun>> runs;
    for (const std::string& mode : options.modes) {
      auto run = std::make_unique<ModeRun>();
      run->mode = mode;
      run->model = models::make_model(model_options_for(options, mode));
      const models::Model& model = *run->model;
      run->pass = options.nodes_per_pass > 0
                      ? std::min(options.nodes_per_pass, n)
                      : models::automatic_nodes_per_pass(model, inputs.narrow(0, 0, 1), n,
                                                         /*on_gpu=*/false);
      // Passes side by side on one-thread workers (run.pass_workers), as the trainer resolves it.
      for (const int requested : options.pass_workers) {
        run->worker_counts.push_back(
            models::resolve_pass_workers(requested, model, (n + run->pass - 1) / run->pass,
                                         /*on_gpu=*/false, runtime.intra_op_threads));
      }
      run->x = model.init_params(1).unsqueeze(0).repeat({n, 1});
      run->buffers = model.init_buffers(n);
      run->optimizer = std::make_unique<algo::DecentralizedOptimizer>(algo::DecentralizedOptions(),
                                                                      n, model.layout());
      run->ledger = std::make_unique<metrics::ByteLedger>(run->optimizer->make_ledger());
      run->times.resize(run->worker_counts.size());
      // What a pass holds for its backward: the heap's growth over its forward, per node.
      ModeRun* r = run.get();
      run->observer.before_forward = [r](std::int64_t) {
        r->heap_before_forward = heap_bytes_in_use();
      };
      run->observer.after_forward = [r](std::int64_t nodes) {
        r->held.push_back((heap_bytes_in_use() - r->heap_before_forward) /
                          static_cast<double>(nodes));
      };
      runs.push_back(std::move(run));
    }
    const auto run_step = [&](ModeRun& run, std::int64_t step, int workers) {
      // The trainer's CPU configuration: `pass` nodes per forward/backward pass, one grouped
      // kernel per layer for a pass's nodes. What a pass holds is measured in steps run in
      // turn (passes side by side share the heap): with workers only, the first step, a
      // warm-up step unless --warmup is 0.
      const bool observed = workers == 1 || step == 0;
      const at::Tensor grad =
          models::compute_gradients(*run.model, run.x, run.buffers, inputs, targets, run.pass,
                                    nn::ConvAlgorithm::kGrouped, quant::DrawKey{1, step, 0},
                                    observed ? &run.observer : nullptr, observed ? 1 : workers)
              .grad;
      torch::NoGradGuard no_grad;
      run.optimizer->step(run.x, grad, mixing, 0.01, step, *run.ledger);
    };
    const auto counts = static_cast<std::int64_t>(options.pass_workers.size());
    const std::int64_t timed_end = options.warmup_steps + options.steps * counts;
    for (std::int64_t step = 0; step < timed_end; ++step) {
      const std::size_t which = static_cast<std::size_t>(step % counts);
      for (std::size_t mode = 0; mode < runs.size(); ++mode) {
        ModeRun* run = runs[mode].get();
        // Each mode on workers of its own, as in a run of that mode alone.
        const PassWorkerPoolScope own_workers(static_cast<int>(mode));
        if (options.before_step) options.before_step(run->mode, step, run->worker_counts[which]);
        const auto start = Clock::now();
        run_step(*run, step, run->worker_counts[which]);
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        if (step >= options.warmup_steps) run->times[which].push_back(ms);
      }
    }
    // fp32's rows, per worker count, for the ratios (wherever fp32 stands in --modes).
    std::vector<double> fp32_ms(static_cast<std::size_t>(counts), 0.0);
    const std::vector<std::vector<double>>* fp32_times = nullptr;
    double fp32_mib = 0;
    for (const auto& run : runs) {
      if (run->mode != "fp32") continue;
      fp32_times = &run->times;
      for (std::size_t which = 0; which < fp32_ms.size(); ++which) {
        fp32_ms[which] = median(run->times[which]);
      }
      fp32_mib = median(run->held) / (1024.0 * 1024.0);
    }
    for (auto& run : runs) {
      for (std::size_t which = 0; which < run->worker_counts.size(); ++which) {
        PrecisionResult r;
        r.nodes = n;
        r.nodes_per_pass = run->pass;
        r.pass_workers = run->worker_counts[which];
        r.mode = run->mode;
        r.step_ms = median(run->times[which]);
        r.step_ms_samples = run->times[which];
        if (fp32_times != nullptr) {
          const std::vector<double>& fp32_steps = (*fp32_times)[which];
          std::vector<double> ratios;
          for (std::size_t round = 0; round < fp32_steps.size(); ++round) {
            ratios.push_back(fp32_steps[round] / r.step_ms_samples[round]);
          }
          r.round_speedup_vs_fp32 = quartiles(ratios);
        }
        r.images_per_s = static_cast<double>(n * options.batch_size) / (r.step_ms / 1000.0);
        r.activation_mib = median(run->held) / (1024.0 * 1024.0);
        r.speedup_vs_fp32 = fp32_ms[which] > 0 ? fp32_ms[which] / r.step_ms : 0;
        r.activation_ratio_vs_fp32 = fp32_mib > 0 ? fp32_mib / r.activation_mib : 0;
        // Ratios need fp32 in --modes: "-" otherwise.
        const auto ratio = [](double value) {
          char text[16];
          if (value > 0) {
            std::snprintf(text, sizeof text, "%6.2fx", value);
          } else {
            std::snprintf(text, sizeof text, "%7s", "-");
          }
          return std::string(text);
        };
        const Quartiles& by_round = r.round_speedup_vs_fp32;
        char round_text[48] = "      -";
        if (by_round.median > 0) {
          std::snprintf(round_text, sizeof round_text, "%6.2fx [%.2f-%.2f]", by_round.median,
                        by_round.low, by_round.high);
        }
        std::snprintf(line, sizeof line,
                      "%5lld  %4lld  %7d  %-*s  %7.1f  %7.0f  %s  %21.2f  %s  %s",
                      static_cast<long long>(n), static_cast<long long>(run->pass), r.pass_workers,
                      mode_width, run->mode.c_str(), r.step_ms, r.images_per_s,
                      ratio(r.speedup_vs_fp32).c_str(), r.activation_mib,
                      ratio(r.activation_ratio_vs_fp32).c_str(), round_text);
        progress(line);
        results.push_back(r);
      }
      PrecisionResult& r = results.back();
      if (options.profile_rows > 0) {
        // The profiled steps run as the last row's timed ones did, this mode alone; with pass
        // workers the observer watches them too (operator_profile.h) and the rows are the
        // threads' time.
        const int workers = r.pass_workers;
        progress("  (profiled: " + std::to_string(options.steps) + " more steps, " +
                 (workers > 1 ? "their passes on " + std::to_string(workers) +
                                    " workers: rows are the threads' time, shares of their sum)"
                              : std::string("their passes in turn on this thread)")));
        const PassWorkerPoolScope own_workers(static_cast<int>(&run - runs.data()));
        r.profile = profile_operators(
            [&] {
              for (std::int64_t step = timed_end; step < timed_end + options.steps; ++step) {
                run_step(*run, step, workers);
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
    j["options"]["pass_workers"] = options.pass_workers;      // 0: automatic; several: alternating
    j["options"]["modes"] = options.modes;
    // How the timed steps were ordered: every mode (and worker count) one step in turn, round by
    // round, the warm-up rounds first.
    j["step_order"] = "modes and worker counts alternating step by step";
    j["options"]["profile_rows"] = options.profile_rows;
    for (const auto& r : results) {
      j["rows"].push_back(
          {{"nodes", r.nodes},
           {"nodes_per_pass", r.nodes_per_pass},
           {"pass_workers", r.pass_workers},
           {"mode", r.mode},
           {"step_ms", r.step_ms},
           {"images_per_s", r.images_per_s},
           // null without an fp32 row to compare with (the table's "-")
           {"speedup_vs_fp32",
            r.speedup_vs_fp32 > 0 ? nlohmann::json(r.speedup_vs_fp32) : nlohmann::json()},
           {"step_ms_samples", r.step_ms_samples},
           {"round_speedup_vs_fp32",
            r.round_speedup_vs_fp32.median > 0
                ? nlohmann::json{{"q1", r.round_speedup_vs_fp32.low},
                                 {"median", r.round_speedup_vs_fp32.median},
                                 {"q3", r.round_speedup_vs_fp32.high}}
                : nlohmann::json()},
           {"activation_mib", r.activation_mib},
           {"activation_ratio_vs_fp32", r.activation_ratio_vs_fp32 > 0
                                            ? nlohmann::json(r.activation_ratio_vs_fp32)
                                            : nlohmann::json()}});
      if (r.profile.operators.empty()) continue;
      nlohmann::json& profile = j["rows"].back()["profile"];
      profile["wall_ms_per_step"] = r.profile.wall_ms_per_step;
      profile["outside_ms_per_step"] = r.profile.outside_ms_per_step;
      // With pass workers the rows are summed over the threads observed.
      profile["threads"] = r.profile.threads;
      profile["thread_ms_per_step"] = r.profile.thread_ms_per_step;
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
