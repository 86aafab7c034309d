#pragma once
// The forward pass of a stride-1 "same" convolution computed by oneDNN's backward-data kernel.
//
// For stride 1 and padding p = (kernel - 1) / 2, a convolution is its own transpose up to the
// weights: with W'[c, o, u, v] = W[o, c, kernel-1-u, kernel-1-v] (input and output channels
// swapped, taps rotated by 180 degrees),
//
//   y[o](i, j) = sum over c, u, v of x[c](i+u-p, j+v-p) W[o, c, u, v]
//              = sum over c, u, v of x[c](i-u'+p, j-v'+p) W'[c, o, u', v']   (u' = kernel-1-u)
//
// which is the input gradient of a convolution with weights W' for the output gradient x. The two
// kernels sum the same products in different orders, so y agrees with at::conv2d to float
// rounding. On AVX2 CPUs oneDNN 2.6's backward-data kernel (jit:avx2, channels-last) runs these
// shapes faster than its forward kernel (docs/benchmarks.md, "AVX2 CPUs" item 11), so the
// fp32 convolution layer takes it there; its gradients are the usual ones
// (at::convolution_backward), bit for bit what autograd computes for at::conv2d.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace lpdt::nn {

// Whether a dense convolution of these options, on input x, runs the backward-data form: a CPU
// float32 channels-last input, one group, stride 1, "same" padding, no bias, channel counts that
// are multiples of 8 (the AVX2 kernels' block; the stem's single input channel is not), on an AVX2
// CPU (the only level where it was measured faster), in a LibTorch built with oneDNN.
bool same_conv_by_backward_data_applies(const at::Tensor& x, std::int64_t in_channels,
                                        std::int64_t out_channels, std::int64_t kernel,
                                        std::int64_t stride, std::int64_t padding,
                                        std::int64_t groups, bool bias);

// The same test without the CPU condition: the shapes and layout the form handles at all.
bool same_conv_by_backward_data_handles(const at::Tensor& x, std::int64_t in_channels,
                                        std::int64_t out_channels, std::int64_t kernel,
                                        std::int64_t stride, std::int64_t padding,
                                        std::int64_t groups, bool bias);

// x: [b, in, H, W] float32 channels-last; weight: [out, in, kernel, kernel] float32;
// padding = (kernel - 1) / 2 -> [b, out, H, W] float32 channels-last, differentiable in x and
// weight (gradients by at::convolution_backward).
at::Tensor same_conv2d_by_backward_data(const at::Tensor& x, const at::Tensor& weight,
                                        std::int64_t padding);

// The rotated, channel-swapped weights W' above: [out, in, k, k] -> [in, out, k, k], contiguous.
at::Tensor transposed_rotated_weight(const at::Tensor& weight);

}  // namespace lpdt::nn
