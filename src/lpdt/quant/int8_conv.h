#pragma once
// Integer convolution and linear layers of the integer backend (design.md, "two arithmetic
// backends"): per node, oneDNN's int8 direct convolution (int8_direct_conv.h), its float32 one
// over input-channel chunks where oneDNN's int8 kernels are not exact (exact_float_conv.h), or
// im2col over uint8 codes and one int8 GEMM, with zero points.
//
//   forward:     y = s_x s_w * sum (q_x - z_x)(q_w - z_w)  (+ bias)       [int32 accumulation]
//   layer grad:  dx = s_g s_w * col2im( sum (q_g - z_g)(q_w - z_w) )
//
// which is what the simulated backend computes in float from the same codes, so the two agree to
// float rounding (tested). Padding is written as the zero point z_x (the gemmlowp scheme makes it
// an integer code), so padded taps are exactly real 0. Weight codes enter the GEMM as int8:
// q_w - 128, with zero point z_w - 128.
//
// Grouped convolutions run one GEMM per group of each node over that group's channel slice;
// depthwise ones (one input and one output channel per group) sum their taps directly
// (int8_depthwise_conv.h).
#include <ATen/ATen.h>

#include <cstdint>

#include "lpdt/quant/affine_quantizer.h"

namespace lpdt::quant {

struct ConvGeometry {
  std::int64_t batch = 1;
  std::int64_t in_channels = 1;   // per node
  std::int64_t out_channels = 1;  // per node
  std::int64_t height = 1;
  std::int64_t width = 1;
  std::int64_t kernel = 1;
  std::int64_t stride = 1;
  std::int64_t padding = 0;
  std::int64_t groups = 1;        // per node; divides in_channels and out_channels
  std::int64_t group_in() const { return in_channels / groups; }
  std::int64_t group_out() const { return out_channels / groups; }
  bool depthwise() const { return groups > 1 && group_in() == 1 && group_out() == 1; }
  // One group's convolution as a dense one (in = group_in, out = group_out).
  ConvGeometry group_geometry() const {
    ConvGeometry g = *this;
    g.in_channels = group_in();
    g.out_channels = group_out();
    g.groups = 1;
    return g;
  }
  std::int64_t out_height() const { return (height + 2 * padding - kernel) / stride + 1; }
  std::int64_t out_width() const { return (width + 2 * padding - kernel) / stride + 1; }
  std::int64_t positions() const { return batch * out_height() * out_width(); }
  std::int64_t patch() const { return kernel * kernel * group_in(); }  // one group's
};

// cols[p, (ky * kernel + kx) * C + c] = x at (b, oy * stride - padding + ky, ox * stride -
// padding + kx, c), or `pad` outside the image; p = (b * Ho + oy) * Wo + ox; C = g.group_in().
// x: one group's channels-last codes, element (b, y, x, c) at ((b * H + y) * W + x) *
// pixel_stride + c. cols: [positions, patch] uint8.
void im2col_u8(const std::uint8_t* x, std::int64_t pixel_stride, const ConvGeometry& g,
               std::uint8_t pad, std::uint8_t* cols);
// The adjoint: adds cols [positions, patch] (float) into dx (same addressing as im2col's x).
void col2im_add(const float* cols, const ConvGeometry& g, float* dx, std::int64_t pixel_stride);

// Weight codes [k, Cout, Cin/groups, kh, kw] uint8 -> the same shape in int8 (codes - 128).
at::Tensor shift_weight_codes(const at::Tensor& codes);
// Shifted weights [k, Cout, Cin/groups, kh, kw] int8 -> [k, groups, kh*kw*Cin/groups,
// Cout/groups] int8: each group's rows in im2col's column order (the GEMM's B).
at::Tensor pack_conv_weight(const at::Tensor& shifted, std::int64_t groups = 1);

// x: codes [b, k*Cin, H, W] channels-last uint8 (per-node scale/zero point); w: codes
// [k, Cout, Cin/groups, kh, kw]; bias: [k*Cout] float32 or undefined -> [b, k*Cout, Ho, Wo]
// float32 channels-last. Dense convolutions run oneDNN's int8 direct convolution where it is
// exact (int8_direct_conv.h), its float32 one elsewhere (exact_float_conv.h), the rest im2col +
// GEMM; all give the same int32 sums.
at::Tensor int8_conv2d(const QuantizedTensor& x, const QuantizedTensor& w, const at::Tensor& bias,
                       const ConvGeometry& g, std::int64_t k);
// gy: codes [b, k*Cout, Ho, Wo] channels-last -> dx [b, k*Cin, H, W] float32 channels-last.
at::Tensor int8_conv2d_input_grad(const QuantizedTensor& gy, const QuantizedTensor& w,
                                  const ConvGeometry& g, std::int64_t k);

// x: codes [k, b, in]; w: codes [k, out, in]; bias [k, out] float32 or undefined
// -> [k, b, out] float32.
at::Tensor int8_linear(const QuantizedTensor& x, const QuantizedTensor& w, const at::Tensor& bias);
// gy: codes [k, b, out] -> dx [k, b, in] float32.
at::Tensor int8_linear_input_grad(const QuantizedTensor& gy, const QuantizedTensor& w);

}  // namespace lpdt::quant
