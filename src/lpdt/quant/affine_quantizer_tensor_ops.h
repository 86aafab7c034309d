#pragma once
// The affine quantizer of affine_quantizer.h written with ATen tensor operations, so that it runs
// on any device (CUDA tensors take this path; the CPU keeps its fused loops). It makes the same
// decisions as the CPU loops: the same per-node parameters, the same counter-based draws (the
// 64-bit hash evaluated on int64 tensors with logical shifts emulated by masks), the same clamp
// and round-half-to-even. Tested against the CPU loops bit for bit on CPU tensors.
//
// Not fused: each call is a dozen element-wise kernels. Under a captured CUDA graph their launch
// cost is gone; the memory traffic remains (docs/benchmarks.md).
#include <ATen/ATen.h>

#include "lpdt/quant/affine_quantizer.h"

namespace lpdt::quant::tensor_ops {

// x: any layout accepted by canonical_layout, k nodes; min, max: [k] float32 on x's device.
NodeRange tensor_range(const at::Tensor& x, std::int64_t k);
NodeRange sample_mean_range(const at::Tensor& x, std::int64_t k);
// Same contracts as the functions of the same names in affine_quantizer.h.
at::Tensor fake_quantize(const at::Tensor& x, std::int64_t k, const NodeRange& range,
                         const QuantizeRequest& request);
QuantizedTensor quantize(const at::Tensor& x, std::int64_t k, const NodeRange& range,
                         const QuantizeRequest& request);
at::Tensor dequantize(const QuantizedTensor& q, std::int64_t k);

// The draws centered_uniform(draw_stream(key, node, site), e) for every element e of each node's
// [samples, rows, cols] order: float32 [k, samples, rows, cols] on `device`.
at::Tensor centered_uniform_draws(const NodeView& v, const DrawKey& key, SiteId site,
                                  at::Device device);

}  // namespace lpdt::quant::tensor_ops
