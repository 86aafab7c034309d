#include "lpdt/exp/conv_forms_bench.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"
#include "lpdt/core/runtime.h"
#include "lpdt/exp/bench_record.h"
#include "lpdt/exp/bench_stats.h"
#include "lpdt/models/model.h"
#include "lpdt/models/node_batched_step.h"
#include "lpdt/nn/same_conv_by_backward_data.h"

namespace lpdt::exp {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_ms(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

std::vector<ConvFormsRow> run_conv_forms_bench(
    const ConvFormsBenchOptions& options, const std::function<void(const std::string&)>& progress) {
  const RuntimeInfo runtime = configure_runtime(options.threads);
  models::ModelOptions model_options;
  model_options.arch = options.arch;
  model_options.depth = options.depth;
  model_options.in_channels = options.channels;
  model_options.height = model_options.width = options.size;
  const auto model = models::make_model(model_options);
  const std::vector<TracedLayer> trace = models::trace_forward(
      *model, torch::zeros({1, options.batch_size, options.channels, options.size, options.size}));

  // Distinct shapes of the convolutions the backward-data form handles, with their counts.
  using Shape = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
  std::map<Shape, std::int64_t> shapes;
  const auto cl = torch::TensorOptions().dtype(torch::kFloat);
  for (const TracedLayer& layer : trace) {
    if (layer.op != TracedOp::kConv) continue;
    const at::Tensor probe =
        torch::empty({1, layer.in_channels, layer.height, layer.width}, cl)
            .contiguous(at::MemoryFormat::ChannelsLast);
    if (!nn::same_conv_by_backward_data_handles(probe, layer.in_channels, layer.out_channels,
                                                layer.kernel, layer.stride, layer.padding,
                                                layer.groups, false)) {
      continue;
    }
    ++shapes[{layer.in_channels, layer.out_channels, layer.height, layer.width, layer.kernel}];
  }
  char line[256];
  std::snprintf(line, sizeof line,
                "lpdt bench --conv-forms: %s, batch %lld, %s, median of %lld calls of each form "
                "after %lld, alternating; this CPU's fp32 layers take the backward-data form: %s",
                model->name().c_str(), static_cast<long long>(options.batch_size),
                runtime.description().c_str(), static_cast<long long>(options.rounds),
                static_cast<long long>(options.warmup_rounds),
                cpu_simd_level() == SimdLevel::kAvx2 ? "yes (AVX2)" : "no");
  progress(line);
  if (shapes.empty()) {
    progress("(no convolution of this model has a shape the backward-data form handles)");
    return {};
  }
  progress("  in   out      HxW  k  layers  forward ms  backward-data ms  speedup  max |diff|");

  torch::NoGradGuard no_grad;
  torch::manual_seed(0);
  std::vector<ConvFormsRow> rows;
  double forward_pass = 0, backward_data_pass = 0;
  for (const auto& [shape, layers] : shapes) {
    ConvFormsRow row;
    std::tie(row.in_channels, row.out_channels, row.height, row.width, row.kernel) = shape;
    row.layers = layers;
    const std::int64_t padding = (row.kernel - 1) / 2;
    const at::Tensor x =
        torch::randn({options.batch_size, row.in_channels, row.height, row.width})
            .contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor w =
        torch::randn({row.out_channels, row.in_channels, row.kernel, row.kernel}) * 0.1;
    const auto direct = [&] { return at::conv2d(x, w, {}, {1, 1}, {padding, padding}); };
    const auto by_backward_data = [&] {
      return nn::same_conv2d_by_backward_data(x, w, padding);
    };
    row.max_abs_difference = (direct() - by_backward_data()).abs().max().item<double>();
    std::vector<double> direct_ms, backward_data_ms;
    for (std::int64_t r = 0; r < options.warmup_rounds + options.rounds; ++r) {
      // Each form goes first in every other round, so a drift in the machine's speed
      // falls on both.
      double t_direct = 0, t_backward_data = 0;
      for (int turn = 0; turn < 2; ++turn) {
        const bool direct_turn = (turn == 0) == (r % 2 == 0);
        const auto start = Clock::now();
        const at::Tensor y = direct_turn ? direct() : by_backward_data();
        (direct_turn ? t_direct : t_backward_data) = elapsed_ms(start);
      }
      if (r < options.warmup_rounds) continue;
      direct_ms.push_back(t_direct);
      backward_data_ms.push_back(t_backward_data);
    }
    row.forward_ms = median(direct_ms);
    row.backward_data_ms = median(backward_data_ms);
    row.speedup = row.forward_ms / row.backward_data_ms;
    forward_pass += row.forward_ms * static_cast<double>(layers);
    backward_data_pass += row.backward_data_ms * static_cast<double>(layers);
    std::snprintf(line, sizeof line, "%4lld  %4lld  %4lldx%-4lld %lld  %6lld  %10.3f  %16.3f  %6.2fx  %10.2e",
                  static_cast<long long>(row.in_channels),
                  static_cast<long long>(row.out_channels), static_cast<long long>(row.height),
                  static_cast<long long>(row.width), static_cast<long long>(row.kernel),
                  static_cast<long long>(row.layers), row.forward_ms, row.backward_data_ms,
                  row.speedup, row.max_abs_difference);
    progress(line);
    rows.push_back(row);
  }
  std::snprintf(line, sizeof line,
                "one forward pass of these layers: forward %.2f ms, backward-data form %.2f ms "
                "(%.2fx)",
                forward_pass, backward_data_pass, forward_pass / backward_data_pass);
  progress(line);

  if (!options.json_path.empty()) {
    nlohmann::json j;
    j["model"] = model->name();
    j["options"] = {{"arch", options.arch},         {"depth", options.depth},
                    {"batch", options.batch_size},  {"channels", options.channels},
                    {"size", options.size},         {"threads", options.threads},
                    {"rounds", options.rounds},     {"warmup_rounds", options.warmup_rounds}};
    j["layers_take_backward_data_form"] = cpu_simd_level() == SimdLevel::kAvx2;
    j["pass_forward_ms"] = forward_pass;
    j["pass_backward_data_ms"] = backward_data_pass;
    for (const ConvFormsRow& r : rows) {
      j["rows"].push_back({{"in_channels", r.in_channels},
                           {"out_channels", r.out_channels},
                           {"height", r.height},
                           {"width", r.width},
                           {"kernel", r.kernel},
                           {"layers", r.layers},
                           {"forward_ms", r.forward_ms},
                           {"backward_data_ms", r.backward_data_ms},
                           {"speedup", r.speedup},
                           {"max_abs_difference", r.max_abs_difference}});
    }
    write_bench_json(options.json_path, std::move(j), runtime, "bench --conv-forms");
  }
  return rows;
}

}  // namespace lpdt::exp
