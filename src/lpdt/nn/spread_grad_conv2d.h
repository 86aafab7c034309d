#pragma once
// A grouped strided convolution whose input gradient takes the stride-1 form of
// core/strided_conv_input_grad.h (the output gradient spread onto the stride-1 grid): the same
// forward and the same gradients as at::conv2d, to float rounding, without cuDNN's slow
// backward-data algorithms for strided grouped convolutions. Conv2d takes it where
// input_grad_by_spread_applies (CUDA, stride > 1, k nodes as groups).
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace lpdt::nn {

// x: [b, in, H, W], weight: [out, in/groups, K, K], bias: [out] or undefined -> [b, out, Ho, Wo],
// as at::conv2d(x, weight, bias, stride, padding, dilation 1, groups).
at::Tensor conv2d_with_spread_input_grad(const at::Tensor& x, const at::Tensor& weight,
                                         const at::Tensor& bias, std::int64_t stride,
                                         std::int64_t padding, std::int64_t groups);

}  // namespace lpdt::nn
