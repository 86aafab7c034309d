#include "lpdt/core/strided_conv_input_grad.h"

#include <ATen/ATen.h>

#include <string>
#include <tuple>

#include "lpdt/core/error.h"

namespace lpdt {

bool input_grad_by_spread_applies(const at::Tensor& x, std::int64_t stride, std::int64_t groups) {
  const bool depthwise = x.dim() == 4 && x.size(1) == groups;
  return x.is_cuda() && stride > 1 && groups > 1 && !depthwise;
}

at::Tensor strided_conv_input_grad_by_spread(const at::Tensor& gy, const at::Tensor& x,
                                             const at::Tensor& w, std::int64_t stride,
                                             std::int64_t padding, std::int64_t groups) {
  LPDT_CHECK(gy.dim() == 4 && x.dim() == 4 && w.dim() == 4,
             "strided_conv_input_grad_by_spread: expected 4-D gradient, input and weight");
  LPDT_CHECK(stride >= 1 && padding >= 0, "strided_conv_input_grad_by_spread: bad stride/padding");
  const std::int64_t kh = w.size(2), kw = w.size(3);
  // The stride-1 convolution's output size, and the strided one's as a check of the shapes.
  const std::int64_t h1 = x.size(2) + 2 * padding - kh + 1;
  const std::int64_t w1 = x.size(3) + 2 * padding - kw + 1;
  LPDT_CHECK(h1 >= 1 && w1 >= 1 && gy.size(2) == (h1 - 1) / stride + 1 &&
                 gy.size(3) == (w1 - 1) / stride + 1,
             "strided_conv_input_grad_by_spread: output gradient " +
                 std::to_string(gy.size(2)) + "x" + std::to_string(gy.size(3)) +
                 " does not match the convolution of a " + std::to_string(x.size(2)) + "x" +
                 std::to_string(x.size(3)) + " input");
  const at::MemoryFormat format = gy.suggest_memory_format();
  at::Tensor spread = at::zeros({gy.size(0), gy.size(1), h1, w1},
                                gy.options().memory_format(format));
  spread.slice(2, 0, h1, stride).slice(3, 0, w1, stride).copy_(gy);
  at::Tensor grad_x;
  std::tie(grad_x, std::ignore, std::ignore) = at::convolution_backward(
      spread, x, w, c10::nullopt, {1, 1}, {padding, padding}, {1, 1}, false, {0, 0}, groups,
      {true, false, false});
  return grad_x;
}

at::Tensor conv_input_grad(const at::Tensor& gy, const at::Tensor& x, const at::Tensor& w,
                           std::int64_t stride, std::int64_t padding, std::int64_t groups) {
  if (input_grad_by_spread_applies(x, stride, groups)) {
    return strided_conv_input_grad_by_spread(gy, x, w, stride, padding, groups);
  }
  at::Tensor grad_x;
  std::tie(grad_x, std::ignore, std::ignore) = at::convolution_backward(
      gy, x, w, c10::nullopt, {stride, stride}, {padding, padding}, {1, 1}, false, {0, 0}, groups,
      {true, false, false});
  return grad_x;
}

}  // namespace lpdt
