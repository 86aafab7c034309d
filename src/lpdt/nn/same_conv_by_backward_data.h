#pragma once
// The fp32 convolution layer's stride-1 "same" convolutions with their forward pass computed by
// oneDNN's backward-data kernel (core/same_conv_backward_data_form.h has the equation and the
// conditions), as an autograd function: its gradients are the usual ones
// (at::convolution_backward), bit for bit what autograd computes for at::conv2d.
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "lpdt/core/same_conv_backward_data_form.h"

namespace lpdt::nn {

// x: [b, in, H, W] float32 channels-last; weight: [out, in, kernel, kernel] float32;
// padding = (kernel - 1) / 2 -> [b, out, H, W] float32 channels-last, differentiable in x and
// weight (gradients by at::convolution_backward).
at::Tensor same_conv2d_by_backward_data(const at::Tensor& x, const at::Tensor& weight,
                                        std::int64_t padding);

}  // namespace lpdt::nn
