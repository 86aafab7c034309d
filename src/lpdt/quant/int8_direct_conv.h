#pragma once
// One node's dense (ungrouped) 8-bit convolution through oneDNN's int8 direct convolution
// primitive, for the integer backend on CPUs with AVX-512 VNNI, where its int32 sums are exact.
// im2col + GEMM (int8_conv.h) copies every input code kernel^2 times and costs what the int8
// arithmetic saves at ResNet-20's widths; the direct primitive reads the codes in place
// (docs/benchmarks.md, "Low precision").
//
// oneDNN's int8 convolution takes a zero point for the source (padded taps are the zero point,
// i.e. real 0) but none for the weights, so the weight zero point enters as a correction stage:
//
//   acc[p, o] = sum_taps (q_x - z_x)(w_o - z_w)
//             = sum_taps (q_x - z_x) w_o           [oneDNN, runtime source zero point]
//               - z_w * S[p]                       [window_sums, here]
//   S[p]      = sum over the window's pixels q inside the image of (sum_c q_x[q, c] - C z_x)
//
// with w = weight codes - 128 (int8) and z_w = weight zero point - 128. Both terms are exact in
// int32, so acc equals the im2col + GEMM product bit for bit (tested against plain loops).
#include <cstdint>

#include "lpdt/quant/int8_conv.h"

namespace lpdt::quant {

// Whether int8_direct_conv_s32 can run here: a build with oneDNN on a CPU with AVX-512 VNNI
// (elsewhere oneDNN's int8 kernels add pairs of products in int16 with saturation, as its GEMM
// does: int8_gemm.h).
bool int8_direct_conv_available();

// x: one node's codes, element (b, y, x, c) at ((b * H + y) * W + x) * pixel_stride + c (the
// node's channel slice of a channels-last tensor; pixel_stride >= C); weight: [Cout, Cin, kernel,
// kernel] int8 (codes - 128), contiguous; weight_zero: the weight zero point - 128; g: one node's
// geometry with groups == 1. acc: [positions, Cout] int32, fully written. With deferred_sums
// ([positions] int32), the correction is left to the caller: acc holds oneDNN's sums and
// deferred_sums S[p] (written only when weight_zero != 0), so that acc - weight_zero * S[p] can be
// formed in the caller's next pass over acc.
// A ConfigError when int8_direct_conv_available() is false.
void int8_direct_conv_s32(const std::uint8_t* x, std::int64_t pixel_stride, std::uint8_t x_zero,
                          const std::int8_t* weight, std::int8_t weight_zero, const ConvGeometry& g,
                          std::int32_t* acc, std::int32_t* deferred_sums = nullptr);

// S[p] of the correction above for every output position p: [positions] int32. x as for
// int8_direct_conv_s32. Exposed for its test.
void window_sums(const std::uint8_t* x, std::int64_t pixel_stride, std::uint8_t x_zero,
                 const ConvGeometry& g, std::int32_t* sums);

}  // namespace lpdt::quant
