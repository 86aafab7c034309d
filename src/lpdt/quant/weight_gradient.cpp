#include "lpdt/quant/weight_gradient.h"

#include <ATen/ATen.h>

#include "lpdt/core/onednn_float_conv.h"

namespace lpdt::quant {

at::Tensor conv_weight_gradient(const at::Tensor& gy, const at::Tensor& x, const at::Tensor& w,
                                std::int64_t stride, std::int64_t padding, std::int64_t groups,
                                WeightGrad precision) {
  // One group: oneDNN's primitive called directly (core/onednn_float_conv.h); in bfloat16 the
  // same kernel LibTorch's bfloat16 convolution_backward runs, so the same values.
  if (gy.scalar_type() == at::kFloat && onednn_float_conv_applies(x, groups, /*bias=*/false)) {
    if (precision == WeightGrad::kFp32) {
      return onednn_conv2d_weight_grad(gy, x, w.sizes(), stride, padding);
    }
    if (onednn_bf16_conv_fast()) {
      return onednn_conv2d_weight_grad(gy, x.to(at::kBFloat16), w.sizes(), stride, padding)
          .to(at::kFloat);
    }
  }
  const at::ScalarType type = precision == WeightGrad::kBf16 ? at::kBFloat16 : at::kFloat;
  auto [unused_x, grad_w, unused_b] = at::convolution_backward(
      gy.to(type), x.to(type), w.to(type), c10::nullopt, {stride, stride}, {padding, padding},
      {1, 1}, false, {0, 0}, groups, {false, true, false});
  return grad_w.to(at::kFloat);
}

at::Tensor linear_weight_gradient(const at::Tensor& gy, const at::Tensor& x, WeightGrad precision) {
  if (precision == WeightGrad::kFp32) return at::bmm(gy.transpose(1, 2), x);
  // The same values through a float32 product of the rounded inputs: LibTorch 1.13's bfloat16
  // bmm on the CPU loses more than the output's rounding (1% of the largest value over 16 terms,
  // measured by WeightGradient.LinearInBfloat16...), and a linear layer's weight gradient is a
  // small part of a convolutional network's step.
  const auto rounded = [](const at::Tensor& t) { return t.to(at::kBFloat16).to(at::kFloat); };
  return rounded(at::bmm(rounded(gy).transpose(1, 2), rounded(x)));
}

}  // namespace lpdt::quant
