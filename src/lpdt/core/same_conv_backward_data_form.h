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
// rounding, and bit for bit when every partial sum is an integer within 2^24 (the integer
// backend's exact float sums, quant/exact_float_conv.h): oneDNN's backward-data kernel is a direct
// convolution, as is every other CPU backward-data implementation of LibTorch (im2col + GEMM), so
// no transform rounds. On AVX2 CPUs oneDNN 2.6's backward-data kernel (jit:avx2, channels-last)
// runs these shapes faster than its forward kernel (docs/benchmarks.md, "AVX2 CPUs" items 11 and
// 12), so the fp32 convolution layer (nn/same_conv_by_backward_data.h) and the integer backend's
// float convolutions take it there.
//
// It lives in core/ because both nn/ and quant/ use it; it needs nothing of either.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace lpdt {

// Whether a dense convolution of these options, on input x, can run the backward-data form: a CPU
// float32 channels-last input, one group, stride 1, "same" padding, no bias, channel counts that
// are multiples of 8 (the AVX2 kernels' block; the stem's single input channel is not), in a
// LibTorch built with oneDNN.
bool same_conv_by_backward_data_handles(const at::Tensor& x, std::int64_t in_channels,
                                        std::int64_t out_channels, std::int64_t kernel,
                                        std::int64_t stride, std::int64_t padding,
                                        std::int64_t groups, bool bias);

// The same test plus the CPU condition: an AVX2 CPU, the only level where the form was measured
// faster. This is what the layers decide by.
bool same_conv_by_backward_data_applies(const at::Tensor& x, std::int64_t in_channels,
                                        std::int64_t out_channels, std::int64_t kernel,
                                        std::int64_t stride, std::int64_t padding,
                                        std::int64_t groups, bool bias);

// The rotated, channel-swapped weights W' above: [out, in, k, k] -> [in, out, k, k], contiguous.
at::Tensor transposed_rotated_weight(const at::Tensor& weight);

// y of the equation, not differentiable. x: [b, in, H, W] float32 channels-last (a case that
// same_conv_by_backward_data_handles takes); rotated_weight: W', [in, out, k, k] float32;
// padding = (k - 1) / 2 -> y: [b, out, H, W] float32 channels-last.
at::Tensor same_conv2d_forward_by_backward_data(const at::Tensor& x,
                                                const at::Tensor& rotated_weight,
                                                std::int64_t padding);

}  // namespace lpdt
