#pragma once
// Depthwise 8-bit convolution (one input and one output channel per group, as in MobileNetV2)
// for the integer backend. A GEMM per channel would have an inner dimension of kernel^2 = 9 and a
// single output column: one oneDNN call per channel would cost more than the arithmetic, so the
// taps are summed directly, vectorised over channels in the channels-last layout:
//
//   forward:     acc[b, oy, ox, c] = sum_{ky,kx} (q_x[b, oy*s - p + ky, ox*s - p + kx, c] - z_x)
//                                                * t[ky, kx, c]
//   layer grad:  acc[b, y, x, c]   = sum over the (oy, ox, ky, kx) that read (y, x) of
//                                    (q_g[b, oy, ox, c] - z_g) * t[ky, kx, c]
//
// with t = q_w - z_w, all exact in int32 (|q - z| <= 255, 255^2 * kernel^2 < 2^31 up to 180x180
// kernels). Taps outside the image are the zero point, real 0, so they are skipped.
#include <cstdint>

#include "lpdt/quant/int8_conv.h"

namespace lpdt::quant {

// Tap weights of one node's depthwise layer from shifted weights (shift_weight_codes' [C, 1,
// kernel, kernel], the same bytes as pack_conv_weight's
// [C, kernel^2, 1] int8 codes shifted by -128) and the shifted zero point:
// taps[(ky * kernel + kx) * C + c] = packed[c, ky * kernel + kx] - zero.
void depthwise_taps(const std::int8_t* packed, std::int8_t zero, std::int64_t channels,
                    std::int64_t kernel, std::int32_t* taps);

// x: one node's codes, element (b, y, x, c) at ((b * H + y) * W + x) * pixel_stride + c (the
// node's channel slice of a channels-last tensor); taps [kernel^2, C]; g: one node's geometry
// with in_channels = out_channels = groups = C. acc: [positions, C], fully written.
void depthwise_conv_s32(const std::uint8_t* x, std::int64_t pixel_stride, std::uint8_t x_zero,
                        const std::int32_t* taps, const ConvGeometry& g, std::int32_t* acc);

// gy: one node's output-gradient codes, element (b, oy, ox, c) at ((b * Ho + oy) * Wo + ox) *
// pixel_stride + c; acc: [b, H, W, C], fully written (the adjoint of depthwise_conv_s32).
void depthwise_input_grad_s32(const std::uint8_t* gy, std::int64_t pixel_stride,
                              std::uint8_t gy_zero, const std::int32_t* taps,
                              const ConvGeometry& g, std::int32_t* acc);

}  // namespace lpdt::quant
