#pragma once
// The input gradient of a strided convolution computed as that of a stride-1 convolution.
//
// A convolution of stride s is the stride-1 convolution with the same weights and padding p,
// sampled every s-th output: y[o] = y1[s*o], with y1 of size H1 = H + 2p - K + 1 (one dimension
// shown). So its input gradient is the stride-1 convolution's for the output gradient spread onto
// the stride-1 grid, zeros between:
//
//   gy1[i] = gy[i / s] where s divides i, else 0        (i < H1; the last o = (H1 - 1) / s)
//   dL/dx  = backward_data_stride1(gy1, W)
//
// which sums the same products (the zeros add nothing), in the backend's order. Why: for strided
// grouped convolutions (the node-batched engine's k nodes as k groups) cuDNN's autotuner can pick
// a direct backward-data kernel that took 3.08 ms for ResNet-20's 16-node 3x3 stride-2 layer on an
// H200, where the stride-1 form takes 56-89 us (seen under Nsight Compute; the unprofiled step
// was as fast before as after, docs/benchmarks.md, GPU, item 10): with this form the step does not
// depend on that choice. The spread gradient has s^2 times the output's elements.
//
// It lives in core/ because both nn/ (the float convolution) and quant/ (the 8-bit layers'
// backward) use it; it needs nothing of either.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace lpdt {

// Whether conv_input_grad takes the spread form for this layer: a CUDA input, stride > 1 and more
// than one group (node-batched layers; a single group keeps cuDNN's strided kernels), not
// depthwise (one input channel per group: cuDNN's depthwise kernels, not measured against it).
bool input_grad_by_spread_applies(const at::Tensor& x, std::int64_t stride, std::int64_t groups);

// gy: [b, out, Ho, Wo], x: [b, in, H, W] (its sizes and memory format only), w: [out, in/groups,
// K, K]; stride s >= 1, symmetric padding p, no dilation -> dL/dx [b, in, H, W] through the
// stride-1 form above, on any device (the CPU runs it in tests).
at::Tensor strided_conv_input_grad_by_spread(const at::Tensor& gy, const at::Tensor& x,
                                             const at::Tensor& w, std::int64_t stride,
                                             std::int64_t padding, std::int64_t groups);

// dL/dx of the convolution: the spread form where input_grad_by_spread_applies, else
// at::convolution_backward's.
at::Tensor conv_input_grad(const at::Tensor& gy, const at::Tensor& x, const at::Tensor& w,
                           std::int64_t stride, std::int64_t padding, std::int64_t groups);

}  // namespace lpdt
