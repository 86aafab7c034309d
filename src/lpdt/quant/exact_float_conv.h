#pragma once
// One node's dense (ungrouped) 8-bit convolution on CPUs where oneDNN's int8 kernels are not
// exact (no AVX-512 VNNI: they add pairs of products in int16 with saturation, int8_gemm.h):
// the same int32 sums, carried exactly in float32 by oneDNN's float32 direct convolution.
//
//   acc[p, o] = sum over the window's taps and input channels c of (q_x - z_x)(q_w - z_w)
//             = sum over input-channel chunks J of conv_f32(x_J - z_x, w_J - z_w)[p, o]
//
// A float32 sum of integers is exact while every partial sum stays within 2^24 in magnitude. Any
// partial sum of output o's chunk J, in any order (fused multiply-adds and split reductions
// included), is bounded by
//
//   x_max * sum over c in J of m_c,   x_max = max(z_x, 255 - z_x) >= |q_x - z_x|,
//                                      m_c = max over o of sum over taps of |q_w - z_w|,
//
// so the chunks are planned from the weights themselves (exact_float_conv_chunks): trained
// weights are far from the extremes, and ResNet-20's 64-channel layers fit one chunk where the
// worst case (every factor 255) allows 28 channels of 3x3. With one chunk the float sums are the
// result and the requantization reads them directly; with several, chunks add up in int32.
// Padding is a float 0, which is the code z_x's real value, so padded taps are exact too.
// Against the im2col + float32 GEMM formulation this reads each code once instead of kernel^2
// times and runs the direct kernel (docs/benchmarks.md, "AVX2 CPUs"). Only direct convolution
// algorithms keep the sums exact (Winograd's transforms round), so it calls oneDNN's direct
// convolution (LibTorch's mkldnn_convolution) and nothing else.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "lpdt/quant/int8_conv.h"

namespace lpdt::quant {

// Whether exact_float_conv can run: LibTorch built with oneDNN (mkldnn).
bool exact_float_conv_available();

// Input channels [first, first + count) convolved in one float32 convolution.
struct ChannelChunk {
  std::int64_t first = 0;
  std::int64_t count = 0;
};

// The fewest consecutive input-channel chunks, greedily from channel 0, that keep every partial
// sum within 2^24 by the bound above. weight: [Cout, Cin, kernel, kernel] int8 (codes - 128),
// contiguous; weight_zero: the weight zero point - 128. Needs kernel^2 <= kExactFloatChunk, so
// that any single channel fits.
std::vector<ChannelChunk> exact_float_conv_chunks(const std::int8_t* weight,
                                                  std::int8_t weight_zero, std::uint8_t x_zero,
                                                  const ConvGeometry& g);

// Which of oneDNN's float32 kernels computes a chunk's sums. kBackwardData computes a stride-1
// "same" convolution as the input gradient of one with rotated, channel-swapped weights
// (core/same_conv_backward_data_form.h), where that takes the chunk (channels in 8s); other
// chunks run the forward kernel either way. Both are direct convolutions: the same exact sums.
enum class FloatConvForm { kForward, kBackwardData };

// The form this CPU runs faster: kBackwardData on AVX2 CPUs (docs/benchmarks.md, "AVX2 CPUs"
// item 12), kForward elsewhere.
FloatConvForm preferred_float_conv_form();

// x: one node's codes, element (b, y, x, c) at ((b * H + y) * W + x) * pixel_stride + c (the
// node's channel slice of a channels-last tensor; pixel_stride >= C); weight, weight_zero as
// above; g: one node's geometry with groups == 1. Returns the sums [positions, Cout]: float32
// when one chunk held them all (then every sum is an integer within 2^24, exact), int32
// otherwise; either way the same sums as int8_direct_conv_s32 and the im2col + GEMM product, bit
// for bit, in either form (tested against plain loops).
at::Tensor exact_float_conv(const std::uint8_t* x, std::int64_t pixel_stride, std::uint8_t x_zero,
                            const std::int8_t* weight, std::int8_t weight_zero,
                            const ConvGeometry& g,
                            FloatConvForm form = preferred_float_conv_form());

// The same sums as int32 into acc [positions, Cout], fully written.
void exact_float_conv_s32(const std::uint8_t* x, std::int64_t pixel_stride, std::uint8_t x_zero,
                          const std::int8_t* weight, std::int8_t weight_zero, const ConvGeometry& g,
                          std::int32_t* acc, FloatConvForm form = preferred_float_conv_form());

}  // namespace lpdt::quant
