#pragma once
// The convolution layer's dense float32 and bfloat16 convolutions through oneDNN's primitives,
// called directly (core/onednn_float_conv.h), as an autograd function: the same forward and
// gradients as at::conv2d, to float rounding, without LibTorch's per-call wrapping.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace lpdt::nn {

// x: [b, in, H, W] T channels-last; weight: [out, in, kh, kw] T -> [b, out, Ho, Wo] T
// channels-last, as at::conv2d(x, weight, {}, stride, padding), differentiable in x and weight;
// T is float32 or bfloat16 (gradients in T as well), as onednn_conv2d_forward takes them; the
// layers call it where onednn_float_conv_applies.
at::Tensor direct_conv2d(const at::Tensor& x, const at::Tensor& weight, std::int64_t stride,
                         std::int64_t padding);

}  // namespace lpdt::nn
