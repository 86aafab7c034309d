#include "lpdt/nn/range_evonorm.h"

#include <cmath>

#include "lpdt/core/error.h"
#include "lpdt/nn/flat_group_scales.h"
#include "lpdt/nn/quantized_params.h"
#include "lpdt/nn/range_evonorm_kernel.h"
#include "lpdt/quant/fake_quant_ops.h"

namespace lpdt::nn {

at::Tensor hard_sigmoid(const at::Tensor& x) { return at::clamp(x / 6.0 + 0.5, 0.0, 1.0); }

std::int64_t range_chunks(std::int64_t n) {
  constexpr std::int64_t kReferenceChunks = 16;
  // A chunk needs two elements for a range (and ln m > 0 in the scale factor).
  for (std::int64_t c = kReferenceChunks; c > 1; --c) {
    if (n % c == 0 && n / c >= 2) return c;
  }
  return 1;
}

double range_scale_factor(std::int64_t m) {
  const double pi = std::acos(-1.0);
  return 0.5 * 0.35 * (1.0 + std::sqrt(pi * std::log(4.0))) / std::sqrt(2.0 * std::log(double(m)));
}

RangeEvoNorm::RangeEvoNorm(Registry& registry, const std::string& name, std::int64_t channels,
                           std::int64_t groups, const quant::QuantOptions& quant, bool zero_gamma)
    : name_(name),
      channels_(channels),
      groups_(std::min(groups, channels)),
      quant_(quant),
      variant_(quant.range_evonorm == "paper" ? Variant::kPaper
               : quant.range_evonorm == "std" ? Variant::kStd
                                              : Variant::kReference) {
  if (channels % groups_ != 0) {
    throw ConfigError("Range EvoNorm '" + name + "': " + std::to_string(channels) +
                      " channels are not divisible into " + std::to_string(groups_) +
                      " groups; choose model.groups dividing every layer's width");
  }
  if (variant_ == Variant::kPaper && channels / groups_ < 2) {
    throw ConfigError("Range EvoNorm '" + name + "' (quant.range_evonorm = 'paper'): C(c/g) = " +
                      "1/sqrt(2 ln(c/g)) needs at least 2 channels per group, got " +
                      std::to_string(channels) + " channels in " + std::to_string(groups_) +
                      " groups; lower model.groups");
  }
  if (quant.low_precision()) input_.emplace(registry, join_name(name, "quantize_input"), quant);
  gamma_ = registry.add_param(join_name(name, "weight"), {channels},
                              zero_gamma ? ParamInit::zeros() : ParamInit::ones());
  beta_ = registry.add_param(join_name(name, "bias"), {channels}, ParamInit::zeros());
  v_ = registry.add_param(join_name(name, "v"), {channels}, ParamInit::ones());
  if (quant.low_precision()) grad_site_ = registry.add_quant_site(join_name(name, "quantize_grad"));
}

at::Tensor RangeEvoNorm::forward(const Context& ctx, const at::Tensor& x_in) const {
  // The reference statistic's scale factor is 1 / sqrt(2 ln m) over chunks of m values: a group
  // of one value (one channel per group on 1x1 maps) has no range and would make every output
  // NaN.
  if (variant_ == Variant::kReference && x_in.dim() == 4 &&
      channels_ / groups_ * x_in.size(2) * x_in.size(3) < 2) {
    throw ConfigError("Range EvoNorm '" + name_ + "': a group of " +
                      std::to_string(channels_ / groups_) + " channel(s) of " +
                      std::to_string(x_in.size(2)) + "x" + std::to_string(x_in.size(3)) +
                      " maps holds one value, which has no range: use fewer groups "
                      "(model.groups), larger inputs, or quant.range_evonorm = 'std'");
  }
  const bool q = quant_.low_precision();
  const bool on_cuda = x_in.is_cuda();
  // The fused kernels take the input as 8-bit codes (quant::quantize): wider codes (quant.bits
  // 9 to 16) and the reference scheme take the composite code.
  if (!fused_ || !(on_cuda || range_evonorm_fused_supports(x_in)) ||
      (q && (quant_.scheme != quant::QuantScheme::kGemmlowp || quant_.bits > 8))) {
    return forward_composite(ctx, x_in);
  }
  const std::int64_t k = ctx.k, kc = k * channels_, cg = channels_ / groups_;
  RangeEvoNormShape shape;
  shape.k = k;
  shape.channels = channels_;
  shape.groups = groups_;
  if (variant_ == Variant::kStd) {
    shape.statistic = GroupStatistic::kStd;
  } else if (variant_ == Variant::kPaper) {
    shape.chunks = 1;
    shape.range_factor = 1.0 / std::sqrt(2.0 * std::log(static_cast<double>(cg)));
  } else {
    const std::int64_t group_numel = cg * x_in.size(2) * x_in.size(3);
    shape.chunks = range_chunks(group_numel);
    shape.range_factor = range_scale_factor(group_numel / shape.chunks);
  }
  // On a GPU the CUDA kernels take the range statistic (builds with them); the rest, the
  // composite code.
  if (on_cuda && !range_evonorm_cuda_supports(x_in, shape)) return forward_composite(ctx, x_in);
  quant::QuantizedTensor codes;
  if (q) {
    quant::QuantizeRequest request;
    const quant::NodeRange range = input_->measure(ctx, x_in, request);
    codes = quant::quantize(x_in.detach(), k, range, request);
    shape.scale_bits = quant_.bits;
    shape.scale_scheme = quant_.scheme;
    shape.quantize_output_grad = true;
    shape.output_grad_request = gradient_request(ctx, quant_, grad_site_);
  }
  const auto param = [&](ParamRef ref) {
    return (q ? quantized_param(ctx, ref, quant_) : ctx.param(ref)).reshape({kc});
  };
  const auto fused = on_cuda ? range_evonorm_fused_cuda : range_evonorm_fused;
  return fused(x_in, codes, param(v_), param(gamma_), param(beta_), shape);
}

at::Tensor RangeEvoNorm::forward_composite(const Context& ctx, const at::Tensor& x_in) const {
  const bool q = quant_.low_precision();
  const std::int64_t k = ctx.k, b = x_in.size(0), h = x_in.size(2), w = x_in.size(3);
  const std::int64_t kc = k * channels_, cg = channels_ / groups_;
  const at::Tensor x = q ? input_->forward(ctx, x_in) : x_in;
  const auto param = [&](ParamRef ref) {  // [k, C] -> [1, k*C, 1, 1]
    return (q ? quantized_param(ctx, ref, quant_) : ctx.param(ref)).reshape({1, kc, 1, 1});
  };
  // Numerator: x * hsig(v x).
  const at::Tensor numerator = x * hard_sigmoid(x * param(v_));
  // Per (sample, node, group) range statistic, over the group's elements in NCHW order as the
  // reference reshapes them: [b, k, G, cg*H*W].
  const std::int64_t group_numel = cg * h * w;
  const at::Tensor grouped = x.view({b, k, channels_, h, w}).reshape({b, k, groups_, group_numel});
  at::Tensor scale;  // [b, k, G]
  if (variant_ == Variant::kStd) {
    // EvoNorm-S0's denominator (eq. 4): the biased variance over the group.
    scale = 1.0 / (grouped.var(-1, /*unbiased=*/false) + kStdEpsilon).sqrt();
  } else if (variant_ == Variant::kPaper) {
    const at::Tensor range =
        std::get<0>(grouped.max(-1)) - std::get<0>(grouped.min(-1));  // [b, k, G]
    const double c = 1.0 / std::sqrt(2.0 * std::log(static_cast<double>(cg)));
    scale = 1.0 / (range * c + 1e-5);
  } else {
    const std::int64_t chunks = range_chunks(group_numel), m = group_numel / chunks;
    const at::Tensor chunked = grouped.reshape({b, k, groups_, chunks, m});
    const at::Tensor chunk_ranges =
        std::get<0>(chunked.max(-1)) - std::get<0>(chunked.min(-1));  // [b, k, G, chunks]
    // The mean of the chunk ranges summed in chunk order, as the fused kernel sums them: a
    // reduction in another order can differ in the last bit, and a group scale within an ulp of
    // a rounding boundary of its 8-bit quantization would then round to another code.
    at::Tensor range_sum = chunk_ranges.select(-1, 0);
    for (std::int64_t j = 1; j < chunks; ++j) range_sum = range_sum + chunk_ranges.select(-1, j);
    const at::Tensor range = range_sum / static_cast<double>(chunks);  // [b, k, G]
    scale = 1.0 / (range * range_scale_factor(m) + 1e-5);
  }
  if (variant_ != Variant::kStd) {
    // A flat group's 1e5 takes its node's largest other scale (flat_group_scales.h).
    scale = flat_entries_take_largest_scale(scale, scale.ge(kFlatRangeScale), /*node_dim=*/1);
  }
  if (q) {
    // Each node's b x G scales share one per-tensor range (reference spec 7.2).
    scale = quantize_nearest(scale.transpose(0, 1).contiguous(), k, quant_).transpose(0, 1);
  }
  // Broadcast each group's scale over its cg channels: [b, k*C, 1, 1].
  const at::Tensor per_channel =
      scale.reshape({b, k * groups_, 1}).expand({b, k * groups_, cg}).reshape({b, kc, 1, 1});
  at::Tensor out = numerator * per_channel * param(gamma_) + param(beta_);
  out = out.contiguous(at::MemoryFormat::ChannelsLast);
  if (q) out = quant::quantize_gradient(out, k, gradient_request(ctx, quant_, grad_site_));
  return out;
}

}  // namespace lpdt::nn
