#pragma once
#include <optional>
#include <string>

#include "lpdt/nn/layer.h"
#include "lpdt/nn/quant_measure.h"

namespace lpdt::nn {

// Hard sigmoid (paper eq. 5): max(0, min(1, (x + 3) / 6)) = clamp(x / 6 + 1/2, 0, 1); gradient
// 1/6 inside [-3, 3] boundaries included (as torch.clamp), 0 outside.
at::Tensor hard_sigmoid(const at::Tensor& x);

// Chunks a range statistic splits a group of n elements into: the reference's 16 when they
// divide n, otherwise the largest count below 16 that does (the reference itself falls back to
// 14 chunks for shapes 16 does not divide, in its MobileNetV2); every chunk keeps at least two
// elements. n >= 1.
std::int64_t range_chunks(std::int64_t n);
// Banner et al.'s range-to-std constant for chunks of m elements (reference spec 7.3):
// 0.5 * 0.35 * (1 + sqrt(pi * ln 4)) / sqrt(2 ln m).
double range_scale_factor(std::int64_t m);

// Range EvoNorm (paper section 3, eq. 5): x * hsig(v x) / (C * range(x)) * gamma + beta, with
// per-sample, per-group statistics. Two variants (quant.range_evonorm; docs/quantization.md):
//  - "reference" (the official code, reference spec 7.3): range = mean over `range_chunks`
//    chunks of the group of (max - min); scale s = 1 / (range * range_scale_factor(M) + 1e-5)
//    with M the chunk size;
//  - "paper" (eq. 5 as printed): range over the whole group, C = 1 / sqrt(2 ln(c/g)),
//    s = 1 / (C * range + 1e-5) (eps added as in the reference); needs c/g >= 2;
//  - "std" (not in the paper): EvoNorm-S0's statistic (eq. 4), s = 1 / sqrt(var + 1e-5) with
//    the biased variance over the group, keeping the hard sigmoid and every quantizer: isolates
//    the range statistic's share of the gap between 8-bit and EvoNorm-S0 fp32 training.
// In 8-bit models (quant.low_precision()) the input is fake-quantized by a QuantMeasure, v, gamma,
// beta and the scale s by their per-node [min, max] (nearest), and the gradient passed backwards
// is quantized to grad_bits; at fp32 the same function runs without quantizers (paper Figure 1).
// Parameters per channel: v = 1, gamma = 1 (0 with zero_gamma: the reference's zero-initialised
// residual branch), beta = 0.
class RangeEvoNorm : public Layer {
 public:
  RangeEvoNorm(Registry& registry, const std::string& name, std::int64_t channels,
               std::int64_t groups, const quant::QuantOptions& quant, bool zero_gamma = false);
  // x: [b, k*C, H, W] float32 (channels-last) -> same shape
  at::Tensor forward(const Context& ctx, const at::Tensor& x) const override;
  // The fused CPU operation (range_evonorm_kernel.h) is used for float32 CPU inputs (and, at 8
  // bits, the gemmlowp scheme); off: the composite ATen version, as on other devices.
  void use_fused_kernel(bool on) { fused_ = on; }

 private:
  at::Tensor forward_composite(const Context& ctx, const at::Tensor& x) const;
  bool fused_ = true;
  std::string name_;  // in errors
  std::int64_t channels_;
  std::int64_t groups_;
  quant::QuantOptions quant_;
  enum class Variant { kReference, kPaper, kStd };
  Variant variant_;
  std::optional<QuantMeasure> input_;
  ParamRef gamma_;
  ParamRef beta_;
  ParamRef v_;
  quant::SiteId grad_site_ = 0;
};

}  // namespace lpdt::nn
