#include "lpdt/exp/conv_forms_bench.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"
#include "lpdt/core/onednn_float_conv.h"
#include "lpdt/core/runtime.h"
#include "lpdt/exp/bench_record.h"
#include "lpdt/exp/bench_stats.h"
#include "lpdt/models/model.h"
#include "lpdt/models/node_batched_step.h"
#include "lpdt/nn/same_conv_by_backward_data.h"
#include "lpdt/quant/exact_float_conv.h"
#include "lpdt/quant/int16_pair_conv.h"

namespace lpdt::exp {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_ms(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Medians of `rounds` timed calls of a and of b after `warmup` untimed rounds, each going first in
// every other round, so that a drift in the machine's speed falls on both.
std::pair<double, double> alternating_medians(const std::function<at::Tensor()>& a,
                                              const std::function<at::Tensor()>& b,
                                              std::int64_t warmup, std::int64_t rounds) {
  std::vector<double> a_ms, b_ms;
  for (std::int64_t r = 0; r < warmup + rounds; ++r) {
    double t_a = 0, t_b = 0;
    for (int turn = 0; turn < 2; ++turn) {
      const bool a_turn = (turn == 0) == (r % 2 == 0);
      const auto start = Clock::now();
      const at::Tensor y = a_turn ? a() : b();
      (a_turn ? t_a : t_b) = elapsed_ms(start);
    }
    if (r < warmup) continue;
    a_ms.push_back(t_a);
    b_ms.push_back(t_b);
  }
  return {median(a_ms), median(b_ms)};
}

double max_relative_difference(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>() / std::max(b.abs().max().item<double>(), 1e-30);
}

// Every one-group convolution shape of the trace (the fp32 layer's direct form takes all of
// them but a one-channel stem), timed as one training step runs them: LibTorch's at::convolution and
// at::convolution_backward against the direct primitives, alternating; the input gradient left
// out for the first weighted layer, whose input (the data) needs none.
std::vector<DirectConvRow> time_direct_primitives(const ConvFormsBenchOptions& options,
                                                  const std::vector<TracedLayer>& trace,
                                                  const std::function<void(const std::string&)>& progress) {
  using Shape = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                           std::int64_t, std::int64_t, bool>;
  std::map<Shape, std::int64_t> shapes;
  bool first_weighted_layer = true;
  for (const TracedLayer& layer : trace) {
    const bool weighted = layer.op == TracedOp::kConv || layer.op == TracedOp::kLinear;
    const bool input_gradient = !first_weighted_layer;
    if (weighted) first_weighted_layer = false;
    if (layer.op != TracedOp::kConv || layer.groups != 1) continue;
    ++shapes[{layer.in_channels, layer.out_channels, layer.height, layer.width, layer.kernel,
              layer.stride, layer.padding, input_gradient}];
  }
  std::vector<DirectConvRow> rows;
  if (shapes.empty()) return rows;
  if (!onednn_float_conv_built()) {
    progress(
        "fp32 training-step convolutions through oneDNN's primitives called directly: not timed, "
        "this build has no oneDNN (libdnnl-dev; README, 'CUDA build')");
    return rows;
  }
  progress(
      "fp32 training-step convolutions (forward, input and weight gradients): LibTorch's calls "
      "against oneDNN's primitives called directly (core/onednn_float_conv.h)");
  progress("  in   out      HxW  k  s  layers  LibTorch ms  direct ms  speedup  max rel |diff|  "
           "Winograd ms (vs direct, rel |diff|)  "
           "(*: no input gradient; L: the layer keeps LibTorch's; -: no Winograd kernel)");
  double libtorch_step = 0, direct_step = 0, winograd_step = 0;
  char line[256];
  for (const auto& [shape, layers] : shapes) {
    DirectConvRow row;
    std::int64_t padding = 0;
    std::tie(row.in_channels, row.out_channels, row.height, row.width, row.kernel, row.stride,
             padding, row.input_gradient) = shape;
    const bool dx_wanted = row.input_gradient;
    row.layers = layers;
    const at::Tensor x = torch::randn({options.batch_size, row.in_channels, row.height, row.width})
                             .contiguous(at::MemoryFormat::ChannelsLast);
    row.layer_takes_direct = onednn_float_conv_applies(x, 1, false);
    const at::Tensor w =
        torch::randn({row.out_channels, row.in_channels, row.kernel, row.kernel}) * 0.1;
    const std::int64_t s = row.stride;
    const at::Tensor gy = torch::randn_like(at::conv2d(x, w, {}, {s, s}, {padding, padding}));
    // Each returns the three results in one tensor, so that the timing helper can take it.
    const auto libtorch = [&] {
      const at::Tensor y = at::convolution(x, w, {}, {s, s}, {padding, padding}, {1, 1}, false,
                                           {0, 0}, 1);
      auto [dx, dw, unused] =
          at::convolution_backward(gy, x, w, c10::nullopt, {s, s}, {padding, padding}, {1, 1},
                                   false, {0, 0}, 1, {dx_wanted, true, false});
      return dx_wanted ? at::cat({y.reshape(-1), dx.reshape(-1), dw.reshape(-1)})
                       : at::cat({y.reshape(-1), dw.reshape(-1)});
    };
    const auto by_primitives = [&](OnednnConvAlgorithm algorithm) {
      const at::Tensor y = onednn_conv2d_forward(x, w, s, padding, algorithm);
      const at::Tensor dw = onednn_conv2d_weight_grad(gy, x, w.sizes(), s, padding, algorithm);
      if (!dx_wanted) return at::cat({y.reshape(-1), dw.reshape(-1)});
      const at::Tensor dx = onednn_conv2d_input_grad(gy, w, x.sizes(), s, padding, algorithm);
      return at::cat({y.reshape(-1), dx.reshape(-1), dw.reshape(-1)});
    };
    const auto direct = [&] { return by_primitives(OnednnConvAlgorithm::kDirect); };
    const auto winograd = [&] { return by_primitives(OnednnConvAlgorithm::kWinograd); };
    row.max_relative_difference = max_relative_difference(direct(), libtorch());
    std::tie(row.libtorch_ms, row.direct_ms) =
        alternating_medians(libtorch, direct, options.warmup_rounds, options.rounds);
    row.speedup = row.libtorch_ms / row.direct_ms;
    row.winograd_run = x.size(1) > 1 && onednn_winograd_available(x.sizes(), w.sizes(), s, padding);
    if (row.winograd_run) {
      row.winograd_max_relative_difference = max_relative_difference(winograd(), direct());
      std::tie(row.winograd_direct_ms, row.winograd_ms) =
          alternating_medians(direct, winograd, options.warmup_rounds, options.rounds);
      row.winograd_speedup = row.winograd_direct_ms / row.winograd_ms;
    }
    const double layer_ms = row.layer_takes_direct ? row.direct_ms : row.libtorch_ms;
    libtorch_step += row.libtorch_ms * static_cast<double>(layers);
    direct_step += layer_ms * static_cast<double>(layers);
    // Winograd's time scaled to the first alternation's direct time: the shape's share if the
    // layer took Winograd, on the same footing as the other rows.
    winograd_step += (row.winograd_run && row.winograd_speedup > 1
                          ? row.direct_ms / row.winograd_speedup
                          : layer_ms) *
                     static_cast<double>(layers);
    char winograd_text[64] = "          -";
    if (row.winograd_run) {
      std::snprintf(winograd_text, sizeof winograd_text, "%11.3f (%5.2fx, %8.1e)", row.winograd_ms,
                    row.winograd_speedup, row.winograd_max_relative_difference);
    }
    std::snprintf(line, sizeof line, "%4lld  %4lld  %4lldx%-4lld %lld  %lld  %6lld  %11.3f  %9.3f  %6.2fx  %14.2e  %s%s%s",
                  static_cast<long long>(row.in_channels), static_cast<long long>(row.out_channels),
                  static_cast<long long>(row.height), static_cast<long long>(row.width),
                  static_cast<long long>(row.kernel), static_cast<long long>(row.stride),
                  static_cast<long long>(row.layers), row.libtorch_ms, row.direct_ms, row.speedup,
                  row.max_relative_difference, winograd_text, row.input_gradient ? "" : "  *",
                  row.layer_takes_direct ? "" : "  L");
    progress(line);
    rows.push_back(row);
  }
  std::snprintf(line, sizeof line,
                "one training step's convolutions: LibTorch %.2f ms, the layer's forms (direct "
                "primitives but where marked L) %.2f ms (%.2fx)",
                libtorch_step, direct_step, libtorch_step / direct_step);
  progress(line);
  std::snprintf(line, sizeof line,
                "with Winograd where it was faster: %.2f ms (%.2fx the layer's forms)",
                winograd_step, direct_step / winograd_step);
  progress(line);
  return rows;
}

}  // namespace

std::vector<ConvFormsRow> run_conv_forms_bench(
    const ConvFormsBenchOptions& options, const std::function<void(const std::string&)>& progress,
    std::vector<DirectConvRow>* direct_rows_out) {
  const RuntimeInfo runtime = configure_runtime(options.threads, /*on_cuda=*/false);
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
    if (!same_conv_by_backward_data_handles(probe, layer.in_channels, layer.out_channels,
                                            layer.kernel, layer.stride, layer.padding, layer.groups,
                                            false)) {
      continue;
    }
    ++shapes[{layer.in_channels, layer.out_channels, layer.height, layer.width, layer.kernel}];
  }
  // Nothing to time is a usage error (no --json file left as if this were its result).
  if (shapes.empty()) {
    throw ConfigError("bench --conv-forms: no convolution of " + model->name() +
                      " has a shape the backward-data form handles (stride 1, 'same' padding, "
                      "ungrouped): expected a model with such layers, e.g. --arch resnet or vgg11");
  }
  char line[512];
  std::snprintf(line, sizeof line,
                "lpdt bench --conv-forms: %s, batch %lld, %s, median of %lld calls of each form "
                "after %lld, alternating; this CPU's fp32 layers take the backward-data form: %s",
                model->name().c_str(), static_cast<long long>(options.batch_size),
                runtime.description().c_str(), static_cast<long long>(options.rounds),
                static_cast<long long>(options.warmup_rounds),
                cpu_simd_level() == SimdLevel::kAvx2 ? "yes (AVX2)" : "no");
  progress(line);
  progress(
      "                               fp32 (at::conv2d)                                 |  "
      "the integer backend's sums: float32 (quant/exact_float_conv.h)        |  int16 pairs "
      "(quant/int16_pair_conv.h)");
  progress(
      "  in   out      HxW  k  layers  forward ms  backward-data ms  speedup  max |diff|  |  "
      "forward ms  backward-data ms  speedup  max |diff|  |  ms      vs float  max |diff|");

  torch::NoGradGuard no_grad;
  torch::manual_seed(0);
  std::vector<ConvFormsRow> rows;
  double forward_pass = 0, backward_data_pass = 0;
  double integer_forward_pass = 0, integer_backward_data_pass = 0, int16_pairs_pass = 0;
  bool int16_pairs_every_shape = true;
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
    std::tie(row.forward_ms, row.backward_data_ms) =
        alternating_medians(direct, by_backward_data, options.warmup_rounds, options.rounds);

    // The integer backend's float convolutions of the same shape (quant/exact_float_conv.h):
    // codes around their zero points, weights of trained size (one chunk), both forms.
    quant::ConvGeometry g;
    g.batch = options.batch_size;
    g.in_channels = row.in_channels;
    g.out_channels = row.out_channels;
    g.height = row.height;
    g.width = row.width;
    g.kernel = row.kernel;
    g.padding = padding;
    const at::Tensor codes = torch::randint(
        0, 256, {options.batch_size, row.height, row.width, row.in_channels}, torch::kByte);
    const at::Tensor weight_codes =
        (torch::randn({row.out_channels, row.in_channels, row.kernel, row.kernel}) * 20.0)
            .round()
            .clamp(-128, 127)
            .to(torch::kChar);
    const auto integer_sums = [&](quant::FloatConvForm form) {
      return quant::exact_float_conv(codes.data_ptr<std::uint8_t>(), row.in_channels,
                                     /*x_zero=*/128, weight_codes.data_ptr<std::int8_t>(),
                                     /*weight_zero=*/0, g, form);
    };
    const auto integer_forward = [&] { return integer_sums(quant::FloatConvForm::kForward); };
    const auto integer_backward_data = [&] {
      return integer_sums(quant::FloatConvForm::kBackwardData);
    };
    row.integer_max_abs_difference =
        (integer_forward().to(torch::kDouble) - integer_backward_data().to(torch::kDouble))
            .abs()
            .max()
            .item<double>();
    std::tie(row.integer_forward_ms, row.integer_backward_data_ms) = alternating_medians(
        integer_forward, integer_backward_data, options.warmup_rounds, options.rounds);
    row.speedup = row.forward_ms / row.backward_data_ms;
    row.integer_speedup = row.integer_forward_ms / row.integer_backward_data_ms;
    // The int16 pair-product kernel against the faster float form, in alternating rounds.
    row.int16_pairs_run = quant::int16_pair_conv_handles(g);
    int16_pairs_every_shape = int16_pairs_every_shape && row.int16_pairs_run;
    char int16_column[96] = "   -  (not run: this CPU's integer backend does not take it)";
    if (row.int16_pairs_run) {
      const auto int16_pairs = [&] {
        at::Tensor acc = at::empty({g.positions(), g.out_channels}, at::kInt);
        quant::int16_pair_conv_s32(codes.data_ptr<std::uint8_t>(), row.in_channels,
                                   /*x_zero=*/128, weight_codes.data_ptr<std::int8_t>(),
                                   /*weight_zero=*/0, g, acc.data_ptr<std::int32_t>());
        return acc;
      };
      row.int16_pairs_max_abs_difference =
          (int16_pairs().to(torch::kDouble) - integer_forward().to(torch::kDouble))
              .abs()
              .max()
              .item<double>();
      const bool forward_faster = row.integer_forward_ms < row.integer_backward_data_ms;
      const auto [float_ms, pairs_ms] = alternating_medians(
          forward_faster ? std::function<at::Tensor()>(integer_forward)
                         : std::function<at::Tensor()>(integer_backward_data),
          int16_pairs, options.warmup_rounds, options.rounds);
      row.int16_pairs_ms = pairs_ms;
      row.int16_pairs_speedup = float_ms / pairs_ms;
      int16_pairs_pass += pairs_ms * static_cast<double>(layers);
      std::snprintf(int16_column, sizeof int16_column, "%6.3f  %6.2fx  %10.0f", pairs_ms,
                    row.int16_pairs_speedup, row.int16_pairs_max_abs_difference);
    }
    forward_pass += row.forward_ms * static_cast<double>(layers);
    backward_data_pass += row.backward_data_ms * static_cast<double>(layers);
    integer_forward_pass += row.integer_forward_ms * static_cast<double>(layers);
    integer_backward_data_pass += row.integer_backward_data_ms * static_cast<double>(layers);
    std::snprintf(line, sizeof line,
                  "%4lld  %4lld  %4lldx%-4lld %lld  %6lld  %10.3f  %16.3f  %6.2fx  %10.2e  |  "
                  "%10.3f  %16.3f  %6.2fx  %10.0f  |  %s",
                  static_cast<long long>(row.in_channels), static_cast<long long>(row.out_channels),
                  static_cast<long long>(row.height), static_cast<long long>(row.width),
                  static_cast<long long>(row.kernel), static_cast<long long>(row.layers),
                  row.forward_ms, row.backward_data_ms, row.speedup, row.max_abs_difference,
                  row.integer_forward_ms, row.integer_backward_data_ms, row.integer_speedup,
                  row.integer_max_abs_difference, int16_column);
    progress(line);
    rows.push_back(row);
  }
  std::snprintf(line, sizeof line,
                "one forward pass of these layers: forward %.2f ms, backward-data form %.2f ms "
                "(%.2fx)",
                forward_pass, backward_data_pass, forward_pass / backward_data_pass);
  progress(line);
  std::snprintf(line, sizeof line,
                "the integer backend's float sums for the same layers: forward %.2f ms, "
                "backward-data form %.2f ms (%.2fx)",
                integer_forward_pass, integer_backward_data_pass,
                integer_forward_pass / integer_backward_data_pass);
  progress(line);
  if (int16_pairs_every_shape) {
    std::snprintf(line, sizeof line,
                  "the integer backend's int16 pair products for the same layers: %.2f ms (%.2fx "
                  "the faster float form)",
                  int16_pairs_pass,
                  std::min(integer_forward_pass, integer_backward_data_pass) / int16_pairs_pass);
    progress(line);
  }

  const std::vector<DirectConvRow> direct_rows = time_direct_primitives(options, trace, progress);
  if (direct_rows_out != nullptr) *direct_rows_out = direct_rows;

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
    j["integer_backend_takes_backward_data_form"] =
        quant::preferred_float_conv_form() == quant::FloatConvForm::kBackwardData;
    j["integer_pass_forward_ms"] = integer_forward_pass;
    j["integer_pass_backward_data_ms"] = integer_backward_data_pass;
    j["integer_pass_int16_pairs_ms"] =
        int16_pairs_every_shape ? nlohmann::json(int16_pairs_pass) : nlohmann::json();
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
                           {"max_abs_difference", r.max_abs_difference},
                           {"integer_forward_ms", r.integer_forward_ms},
                           {"integer_backward_data_ms", r.integer_backward_data_ms},
                           {"integer_speedup", r.integer_speedup},
                           {"integer_max_abs_difference", r.integer_max_abs_difference},
                           {"int16_pairs_ms", r.int16_pairs_run ? nlohmann::json(r.int16_pairs_ms)
                                                                : nlohmann::json()},
                           {"int16_pairs_speedup", r.int16_pairs_run
                                                       ? nlohmann::json(r.int16_pairs_speedup)
                                                       : nlohmann::json()},
                           {"int16_pairs_max_abs_difference",
                            r.int16_pairs_run ? nlohmann::json(r.int16_pairs_max_abs_difference)
                                              : nlohmann::json()}});
    }
    j["direct_primitives_rows"] = nlohmann::json::array();
    for (const DirectConvRow& r : direct_rows) {
      j["direct_primitives_rows"].push_back({{"in_channels", r.in_channels},
                                             {"out_channels", r.out_channels},
                                             {"height", r.height},
                                             {"width", r.width},
                                             {"kernel", r.kernel},
                                             {"stride", r.stride},
                                             {"layers", r.layers},
                                             {"input_gradient", r.input_gradient},
                                             {"layer_takes_direct", r.layer_takes_direct},
                                             {"libtorch_ms", r.libtorch_ms},
                                             {"direct_ms", r.direct_ms},
                                             {"speedup", r.speedup},
                                             {"max_relative_difference", r.max_relative_difference},
                                             {"winograd_ms", r.winograd_run
                                                                 ? nlohmann::json(r.winograd_ms)
                                                                 : nlohmann::json()},
                                             {"winograd_direct_ms",
                                              r.winograd_run ? nlohmann::json(r.winograd_direct_ms)
                                                             : nlohmann::json()},
                                             {"winograd_speedup",
                                              r.winograd_run ? nlohmann::json(r.winograd_speedup)
                                                             : nlohmann::json()},
                                             {"winograd_max_relative_difference",
                                              r.winograd_run
                                                  ? nlohmann::json(r.winograd_max_relative_difference)
                                                  : nlohmann::json()}});
    }
    write_bench_json(options.json_path, std::move(j), runtime, "bench --conv-forms");
  }
  return rows;
}

}  // namespace lpdt::exp
