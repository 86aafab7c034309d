#pragma once
// Quantizers as autograd operations (simulated backend; reference spec 7.1-7.2).
#include <ATen/ATen.h>

#include "lpdt/quant/affine_quantizer.h"

namespace lpdt::quant {

// Forward: fake_quantize(x) with the given range; backward: straight-through (the gradient
// passes unchanged, no clipping mask, as the reference's UniformQuantize).
// x: canonical-layout-able float32 (see node_view.h), k nodes; returns float32, x's shape.
at::Tensor fake_quantize_ste(const at::Tensor& x, std::int64_t k, const NodeRange& range,
                             const QuantizeRequest& request);

// Forward: identity. Backward: the incoming gradient fake-quantized with each node's per-tensor
// [min, max] of that gradient, stochastic rounding (the reference's quantize_grad: what makes the
// layer gradients passed backwards 8-bit). request.rounding is ignored (always stochastic).
at::Tensor quantize_gradient(const at::Tensor& x, std::int64_t k, const QuantizeRequest& request);

}  // namespace lpdt::quant
