#pragma once
// One node's dense (ungrouped) 8-bit convolution on AVX2 CPUs without AVX-512 VNNI, in exact
// integer arithmetic of its own: the codes minus their zero points as int16, multiplied in pairs
// of input channels by vpmaddwd (16-bit x 16-bit -> the sum of two 32-bit products) and summed in
// int32.
//
//   acc[p, o] = sum over taps t and input-channel pairs j of
//                 (x[2j] - z_x)(w[o, 2j] - z_w) + (x[2j+1] - z_x)(w[o, 2j+1] - z_w)
//
// Every factor lies in [-255, 255], so a pair's sum (at most 130,050 in magnitude) is exact in
// vpmaddwd (which saturates only for two products of -32,768 x -32,768) and the int32 sum stays
// exact while kernel^2 * (input channels rounded up to even) * 65,025 < 2^31, i.e. up to
// kMaxInt16PairTerms terms. oneDNN's own int8 kernels on such CPUs add pairs of u8 x s8 products
// in int16 with saturation (int8_gemm.h), so they are not exact; the float32 direct convolution
// (exact_float_conv.h) is, at float32's rate. vpmaddwd multiplies 16 pairs per instruction where
// an FMA multiplies 8 floats, and the int16 codes are half the bytes: measured 1.6-2.1x oneDNN's
// float32 forward kernel at ResNet-20's shapes on a Zen 3 CPU (docs/benchmarks.md, "AVX2 CPUs"
// item 14).
//
// The kernel is a direct convolution over a zero-padded int16 copy of the input (padding is real
// 0, the code z_x), blocks of up to 6 output pixels of one row by 16 output channels held in 12
// accumulator registers, weights packed [Cout/16][taps][Cin/2][16][2].
#include <cstdint>

#include "lpdt/quant/int8_conv.h"

namespace lpdt::quant {

// The most product terms one sum may have and stay exact in int32: 33,025 * 65,025 < 2^31.
constexpr std::int64_t kMaxInt16PairTerms = 33025;

// Whether this process runs the kernel at all: an x86-64 GCC build running its AVX2 code
// (simd_level() is kAvx2; see int16_pair_conv_handles).
bool int16_pair_conv_runs_here();

// Whether int16_pair_conv_s32 runs g: a dense convolution, at most kMaxInt16PairTerms terms per
// sum (kernel^2 times the input channels rounded up to even), in an x86-64 GCC build running its
// AVX2 code: simd_level() is kAvx2, on AVX2 CPUs (where it was measured) or under a test's
// ScopedSimdLevel(kAvx2) on an AVX-512 one. On AVX-512 CPUs without VNNI oneDNN's float32 kernels
// multiply 16 floats per instruction, as many as vpmaddwd on AVX2 registers, so the float32 form
// stays there.
bool int16_pair_conv_handles(const ConvGeometry& g);

// x: one node's codes, element (b, y, x, c) at ((b * H + y) * W + x) * pixel_stride + c (the
// node's channel slice of a channels-last tensor; pixel_stride >= C); weight: [Cout, Cin, kernel,
// kernel] int8 (codes - 128), contiguous; weight_zero: the weight zero point - 128; g: one node's
// geometry, any kernel, stride and padding. acc: [positions, Cout] int32, fully written: the same
// sums as the plain loops, bit for bit (tested). Call only where int16_pair_conv_handles(g)
// (an internal error otherwise).
void int16_pair_conv_s32(const std::uint8_t* x, std::int64_t pixel_stride, std::uint8_t x_zero,
                         const std::int8_t* weight, std::int8_t weight_zero, const ConvGeometry& g,
                         std::int32_t* acc);

}  // namespace lpdt::quant
