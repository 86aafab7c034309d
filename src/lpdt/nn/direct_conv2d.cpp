#include "lpdt/nn/direct_conv2d.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include "lpdt/core/error.h"
#include "lpdt/core/onednn_float_conv.h"

namespace lpdt::nn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct DirectConv2d : torch::autograd::Function<DirectConv2d> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            std::int64_t stride, std::int64_t padding) {
    ctx->save_for_backward({x, weight});
    ctx->saved_data["stride"] = stride;
    ctx->saved_data["padding"] = padding;
    return onednn_conv2d_forward(x, weight, stride, padding);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const std::int64_t stride = ctx->saved_data["stride"].toInt();
    const std::int64_t padding = ctx->saved_data["padding"].toInt();
    at::Tensor grad_x, grad_w;
    if (ctx->needs_input_grad(0)) {
      grad_x = onednn_conv2d_input_grad(grad[0], weight, x.sizes(), stride, padding);
    }
    if (ctx->needs_input_grad(1)) {
      grad_w = onednn_conv2d_weight_grad(grad[0], x, weight.sizes(), stride, padding);
    }
    return {grad_x, grad_w, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor direct_conv2d(const at::Tensor& x, const at::Tensor& weight, std::int64_t stride,
                         std::int64_t padding) {
  // The primitives check the rest (core/onednn_float_conv.h) before they run.
  LPDT_CHECK(onednn_float_conv_built(), "direct_conv2d: needs a build with oneDNN");
  LPDT_CHECK(weight.scalar_type() == x.scalar_type(),
             "direct_conv2d: weight and x must have one type (float32 or bfloat16)");
  return DirectConv2d::apply(x, weight, stride, padding);
}

}  // namespace lpdt::nn
