#pragma once
// Gradient bifurcation (Banner et al. 2018, section 4; reference spec 7.2): a quantized layer
// computes its weight gradient from the float output gradient (in float32 or, with
// quant.weight_grad = bf16, bfloat16: weight_gradient.h), and passes backwards a layer
// gradient computed from the output gradient quantized to grad_bits (stochastic rounding,
// per-node per-tensor range). The reference builds this from two forward passes
// (out1 + out2 - out1.detach()); here one forward and one backward of each kind compute the same
// values.
#include <ATen/ATen.h>

#include "lpdt/quant/affine_quantizer.h"
#include "lpdt/quant/quant_options.h"

namespace lpdt::quant {

// qx: [b, k*in, H, W] float32 (quantized values), qw: [k*out, in/groups, kh, kw] (quantized,
// grouped over k nodes and `groups` channel groups per node: k * groups convolution groups), qb:
// [k*out] or undefined -> [b, k*out, H', W']. Gradients flow to all three.
at::Tensor bifurcated_conv2d(const at::Tensor& qx, const at::Tensor& qw, const at::Tensor& qb,
                             std::int64_t stride, std::int64_t padding, std::int64_t k,
                             const QuantizeRequest& grad_request, std::int64_t groups,
                             WeightGrad weight_grad);

// qx: [k, b, in], qw: [k, out, in], qb: [k, out] or undefined -> [k, b, out] float32.
at::Tensor bifurcated_linear(const at::Tensor& qx, const at::Tensor& qw, const at::Tensor& qb,
                             const QuantizeRequest& grad_request, WeightGrad weight_grad);

}  // namespace lpdt::quant
