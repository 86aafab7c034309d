#pragma once
// Quantizers as autograd operations (simulated backend; reference spec 7.1-7.2).
#include <ATen/ATen.h>

#include <vector>

#include "lpdt/quant/affine_quantizer.h"

namespace lpdt::quant {

// Forward: fake_quantize(x) with the given range; backward: straight-through (the gradient
// passes unchanged, no clipping mask, as the reference's UniformQuantize).
// x: canonical-layout-able float32 (see node_view.h), k nodes; returns float32, x's shape.
at::Tensor fake_quantize_ste(const at::Tensor& x, std::int64_t k, const NodeRange& range,
                             const QuantizeRequest& request);

// Forward: fake_quantize_each_nearest (affine_quantizer.h: each tensor with its own range,
// round-to-nearest, in its own strides); backward: straight-through for each.
std::vector<at::Tensor> fake_quantize_each_ste(const std::vector<at::Tensor>& tensors,
                                               std::int64_t k, int bits, QuantScheme scheme);

// Forward: identity. Backward: the incoming gradient fake-quantized with each node's per-tensor
// [min, max] of that gradient, stochastic rounding (the reference's quantize_grad: what makes the
// layer gradients passed backwards 8-bit). request.rounding is ignored (always stochastic).
at::Tensor quantize_gradient(const at::Tensor& x, std::int64_t k, const QuantizeRequest& request);

// The reference's Qsum as one operation: fake_quantize_ste(a) + fake_quantize_ste(b), each with its
// own range and request, and quantize_gradient on the sum (the incoming gradient fake-quantized
// once and passed to both summands). The values of those three operations, element for element;
// on the CPU, for 4-D activations, one pass per sample that writes only the sum (the two
// quantized summands stay in a per-thread buffer), elsewhere the three operations themselves.
// a, b: [batch, k*C, H, W] (or node-leading) float32 of one shape, k nodes -> float32.
at::Tensor fake_quantized_sum(const at::Tensor& a, const NodeRange& a_range,
                              const QuantizeRequest& a_request, const at::Tensor& b,
                              const NodeRange& b_range, const QuantizeRequest& b_request,
                              std::int64_t k, const QuantizeRequest& grad_request);

}  // namespace lpdt::quant
