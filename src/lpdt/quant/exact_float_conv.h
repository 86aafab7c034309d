#pragma once
// One node's dense (ungrouped) 8-bit convolution on CPUs where oneDNN's int8 kernels are not
// exact (no AVX-512 VNNI: they add pairs of products in int16 with saturation, int8_gemm.h):
// the same int32 sums, carried exactly in float32 by oneDNN's float32 direct convolution.
//
//   acc[p, o] = sum over the window's taps and input channels c of (q_x - z_x)(q_w - z_w)
//             = sum over input-channel chunks J of conv_f32(x_J - z_x, w_J - z_w)[p, o]
//
// Every factor lies in [-255, 255], so every product is an integer of magnitude <= 65,025 and,
// with a chunk of at most kExactFloatChunk taps (kernel^2 * |J|), every partial sum in any order
// (fused multiply-adds included) is an integer below 2^24: exact in float32. Chunks add up in
// int32. Padding is a float 0, which is the code z_x's real value, so padded taps are exact too.
// Against the im2col + float32 GEMM formulation this reads each code once instead of kernel^2
// times and runs the direct kernel (65 GFLOP/s on an AVX2 core, docs/benchmarks.md, "AVX2 CPUs").
// Only direct convolution algorithms keep the sums exact (Winograd's transforms round), so it
// calls oneDNN's direct convolution (LibTorch's mkldnn_convolution) and nothing else.
#include <cstdint>

#include "lpdt/quant/int8_conv.h"

namespace lpdt::quant {

// Whether exact_float_conv_s32 can run: LibTorch built with oneDNN (mkldnn).
bool exact_float_conv_available();

// Input channels per chunk for a kernel x kernel convolution: kernel^2 * chunk <= kExactFloatChunk.
std::int64_t exact_float_conv_chunk(std::int64_t kernel);

// x: one node's codes, element (b, y, x, c) at ((b * H + y) * W + x) * pixel_stride + c (the
// node's channel slice of a channels-last tensor; pixel_stride >= C); weight: [Cout, Cin, kernel,
// kernel] int8 (codes - 128), contiguous; weight_zero: the weight zero point - 128; g: one node's
// geometry with groups == 1. acc: [positions, Cout] int32, fully written: the same sums as
// int8_direct_conv_s32 and the im2col + GEMM product, bit for bit (tested against plain loops).
void exact_float_conv_s32(const std::uint8_t* x, std::int64_t pixel_stride, std::uint8_t x_zero,
                          const std::int8_t* weight, std::int8_t weight_zero, const ConvGeometry& g,
                          std::int32_t* acc);

}  // namespace lpdt::quant
