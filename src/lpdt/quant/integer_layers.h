#pragma once
// The integer backend's 8-bit convolution and linear layer as autograd operations: the same
// function as bifurcated_conv2d / bifurcated_linear on fake-quantized inputs
// (gradient_bifurcation.h), computed from 8-bit codes (int8_conv.h):
//   forward:      int8 x int8 -> int32 from the codes of x and w;
//   weight grad:  in float32 or bfloat16 (quant.weight_grad, weight_gradient.h), from the float
//                 output gradient and the saved codes of x, dequantized;
//   layer grad:   the output gradient quantized to 8 bits (stochastic, per-node range), then int8.
// Only the codes of x (1 byte per element) and their per-node scale and zero point are kept for
// backward. Gradients reach x and w straight-through, qb as a float bias.
#include <ATen/ATen.h>

#include "lpdt/quant/affine_quantizer.h"
#include "lpdt/quant/int8_conv.h"
#include "lpdt/quant/quant_options.h"

namespace lpdt::quant {

// x: [b, k*Cin, H, W] float32 (the layer input, for the gradient), qx: its codes; w: [k, Cout,
// Cin/g.groups, kh, kw] float32 parameters, qw: their codes; qb: [k*Cout] float32 or undefined.
// -> [b, k*Cout, Ho, Wo] float32 channels-last.
at::Tensor integer_conv2d(const at::Tensor& x, const QuantizedTensor& qx, const at::Tensor& w,
                          const QuantizedTensor& qw, const at::Tensor& qb, const ConvGeometry& g,
                          std::int64_t k, const QuantizeRequest& grad_request,
                          WeightGrad weight_grad);

// x: [k, b, in], w: [k, out, in], qb: [k, out] or undefined -> [k, b, out] float32.
at::Tensor integer_linear(const at::Tensor& x, const QuantizedTensor& qx, const at::Tensor& w,
                          const QuantizedTensor& qw, const at::Tensor& qb,
                          const QuantizeRequest& grad_request, WeightGrad weight_grad);

}  // namespace lpdt::quant
