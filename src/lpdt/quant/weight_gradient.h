#pragma once
// Weight gradients g_w at the precision of quant.weight_grad (gradient bifurcation, paper
// section 3: "either 16-bit or 32-bit float"). The bfloat16 form rounds the output gradient and
// the layer's input to bfloat16, sums the products in float32 (oneDNN, cuDNN) and rounds the
// result to bfloat16; it is returned widened to float32, for the float32 optimizer. Convolutions
// run oneDNN's (cuDNN's) bfloat16 kernels; linear layers compute the same values in float32.
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "lpdt/quant/quant_options.h"

namespace lpdt::quant {

// A convolution's weight gradient. gy [N, Cout_total, Ho, Wo] and x [N, Cin_total, H, W] in one
// memory format; w [Cout_total, Cin_total / groups, kh, kw] gives the shape (its values are not
// read). Returns float32 of w's shape.
at::Tensor conv_weight_gradient(const at::Tensor& gy, const at::Tensor& x, const at::Tensor& w,
                                std::int64_t stride, std::int64_t padding, std::int64_t groups,
                                WeightGrad precision);

// A node-batched linear layer's weight gradient gy^T x: gy [k, b, out], x [k, b, in] ->
// float32 [k, out, in].
at::Tensor linear_weight_gradient(const at::Tensor& gy, const at::Tensor& x, WeightGrad precision);

}  // namespace lpdt::quant
