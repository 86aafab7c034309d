#pragma once
// Range EvoNorm (range_evonorm.h) as one CPU operation with its own backward: two passes over
// the activations each way instead of a chain of ~15 ATen operations, and, in 8-bit models, only
// the input's 8-bit codes kept for backward (1 byte per element; the composite version keeps
// several float tensors). Same function as the composite version (tested).
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "lpdt/quant/affine_quantizer.h"

namespace lpdt::nn {

// The per (sample, node, group) statistic the scale s is computed from.
enum class GroupStatistic {
  kChunkRanges,  // s = 1 / (mean over chunks of (max - min) * range_factor + 1e-5)
  kStd,          // s = 1 / sqrt(biased variance + kStdEpsilon) (EvoNorm-S0's, eq. 4)
};
// EvoNorm-S0's epsilon (nn::EvoNormS0's default).
constexpr double kStdEpsilon = 1e-5;

struct RangeEvoNormShape {
  std::int64_t k = 1;         // nodes
  std::int64_t channels = 1;  // per node
  std::int64_t groups = 1;    // per node
  GroupStatistic statistic = GroupStatistic::kChunkRanges;
  std::int64_t chunks = 1;    // range statistic: chunks per group (1: the whole group)
  double range_factor = 1.0;  // s = 1 / (range * range_factor + 1e-5)
  int scale_bits = 0;         // 0: s not quantized (fp32); else the bits of Q(s)
  quant::QuantScheme scale_scheme = quant::QuantScheme::kGemmlowp;
  // 8-bit models: the output gradient is fake-quantized (per node [min, max], stochastic) before
  // the backward pass uses it, the reference's quantize_grad after the norm, with this request.
  // Done inside the backward pass, sample by sample: the same values as quant::quantize_gradient
  // on the output, without writing the quantized gradient whole.
  bool quantize_output_grad = false;
  quant::QuantizeRequest output_grad_request;
};

// x: [b, k*C, H, W] float32, the layer input as the function sees it (fake-quantized values in
// 8-bit models), for the gradient; x_codes: its codes (8-bit models: uint8 channels-last, with
// per-node scale and zero point; gemmlowp scheme) or undefined (fp32: x itself is kept);
// qv, qgamma, qbeta: [k*C] float32 (quantized in 8-bit models, gradients flow to them);
// shape.scale_bits: 0 (fp32: the scale s is not quantized) or the bits of Q(s), round-to-nearest
// with each node's [min, max] over its b x G scales. -> [b, k*C, H, W] float32 channels-last.
at::Tensor range_evonorm_fused(const at::Tensor& x, const quant::QuantizedTensor& x_codes,
                               const at::Tensor& qv, const at::Tensor& qgamma,
                               const at::Tensor& qbeta, const RangeEvoNormShape& shape);

// The range statistic of one (sample, node) slice as the fused kernel computes it: scale [G] and
// the offsets (pixel * pixel_stride + channel) of each chunk's max and min element [G * chunks].
// `sequential` picks the copy-and-scan method the vectorised one falls back to. x: element
// (pixel p, channel c) at x[p * pixel_stride + c]. Exposed for the test that the two agree.
struct SliceRangeStatistic {
  std::vector<float> scale;
  std::vector<std::int32_t> arg_max, arg_min;
};
SliceRangeStatistic slice_range_statistic(const float* x, std::int64_t pixels,
                                          std::int64_t pixel_stride, std::int64_t channels,
                                          std::int64_t groups, std::int64_t chunks, float factor,
                                          bool sequential);

// The same statistic of an 8-bit slice found on its codes (element (p, c) at
// codes[p * pixel_stride + c], value (code - code_zero_point) * code_scale), as 8-bit models'
// forward pass computes it. Exposed for the test that it equals slice_range_statistic on the
// dequantized values.
SliceRangeStatistic slice_range_statistic_of_codes(const std::uint8_t* codes, float code_scale,
                                                   float code_zero_point, std::int64_t pixels,
                                                   std::int64_t pixel_stride, std::int64_t channels,
                                                   std::int64_t groups, std::int64_t chunks,
                                                   float factor);

// Whether the fused operation handles x (float32 CPU, 4-D).
bool range_evonorm_fused_supports(const at::Tensor& x);

// The same operation on CUDA tensors (cuda/range_evonorm_kernels.h), in builds with the CUDA
// kernels, for the range statistic (kChunkRanges) with at most 16 chunks: the same forward values
// as the CPU operation bit for bit, the backward's sums in another order. Same arguments as
// range_evonorm_fused, on one CUDA device.
bool range_evonorm_cuda_supports(const at::Tensor& x, const RangeEvoNormShape& shape);
at::Tensor range_evonorm_fused_cuda(const at::Tensor& x, const quant::QuantizedTensor& x_codes,
                                    const at::Tensor& qv, const at::Tensor& qgamma,
                                    const at::Tensor& qbeta, const RangeEvoNormShape& shape);

// Q(s): each node's b x G group scales s [b, k, G] fake-quantized round-to-nearest with one
// per-node range (reference spec 7.2), as both fused operations quantize them.
at::Tensor quantize_group_scales(const at::Tensor& s, std::int64_t k, int bits,
                                 quant::QuantScheme scheme);

}  // namespace lpdt::nn
