#include "lpdt/nn/spread_grad_conv2d.h"

#include <torch/csrc/autograd/custom_function.h>
#include <torch/types.h>

#include <tuple>

#include "lpdt/core/strided_conv_input_grad.h"

namespace lpdt::nn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct SpreadGradConv2d : torch::autograd::Function<SpreadGradConv2d> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias_or_empty, std::int64_t stride,
                            std::int64_t padding, std::int64_t groups) {
    const at::Tensor bias = bias_or_empty.numel() > 0 ? bias_or_empty : at::Tensor();
    ctx->save_for_backward({x, weight});
    ctx->saved_data["stride"] = stride;
    ctx->saved_data["padding"] = padding;
    ctx->saved_data["groups"] = groups;
    ctx->saved_data["bias"] = bias.defined();
    return at::conv2d(x, weight, bias, {stride, stride}, {padding, padding}, {1, 1}, groups);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const std::int64_t s = ctx->saved_data["stride"].toInt(),
                       p = ctx->saved_data["padding"].toInt(),
                       groups = ctx->saved_data["groups"].toInt();
    const bool bias = ctx->saved_data["bias"].toBool();
    const at::Tensor gy = grad[0].contiguous(x.suggest_memory_format());
    const std::vector<std::int64_t> bias_sizes{weight.size(0)};
    at::Tensor grad_w, grad_b, grad_x;
    if (ctx->needs_input_grad(1) || (bias && ctx->needs_input_grad(2))) {
      std::tie(std::ignore, grad_w, grad_b) = at::convolution_backward(
          gy, x, weight, bias ? at::OptionalIntArrayRef(bias_sizes) : c10::nullopt, {s, s},
          {p, p}, {1, 1}, false, {0, 0}, groups, {false, true, bias});
    }
    if (ctx->needs_input_grad(0)) {
      grad_x = strided_conv_input_grad_by_spread(gy, x, weight, s, p, groups);
    }
    return {grad_x, grad_w, bias ? grad_b : at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

at::Tensor conv2d_with_spread_input_grad(const at::Tensor& x, const at::Tensor& weight,
                                         const at::Tensor& bias, std::int64_t stride,
                                         std::int64_t padding, std::int64_t groups) {
  // Custom autograd functions take defined tensors only: no bias travels as an empty tensor.
  return SpreadGradConv2d::apply(x, weight, bias.defined() ? bias : at::empty({0}, x.options()),
                                 stride, padding, groups);
}

}  // namespace lpdt::nn
