#include "lpdt/quant/gradient_bifurcation.h"

#include <torch/csrc/autograd/custom_function.h>
#include <torch/types.h>

#include <tuple>

#include "lpdt/core/strided_conv_input_grad.h"
#include "lpdt/quant/request_io.h"
#include "lpdt/quant/weight_gradient.h"

namespace lpdt::quant {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The output gradient at grad_bits: each node's own [min, max], stochastic rounding.
at::Tensor quantized_output_gradient(const at::Tensor& grad, std::int64_t k,
                                     const QuantizeRequest& request) {
  const at::Tensor g = canonical_layout(grad);
  return fake_quantize(g, k, tensor_range(g, k), request);
}

struct BifurcatedConv2d : torch::autograd::Function<BifurcatedConv2d> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& qx, const at::Tensor& qw,
                            const at::Tensor& qb_or_empty, std::int64_t stride,
                            std::int64_t padding, std::int64_t k,
                            const QuantizeRequest& grad_request, std::int64_t groups,
                            WeightGrad weight_grad) {
    const at::Tensor qb = qb_or_empty.numel() > 0 ? qb_or_empty : at::Tensor();
    ctx->save_for_backward({qx, qw});
    ctx->saved_data["bf16_weight_grad"] = weight_grad == WeightGrad::kBf16;
    ctx->saved_data["stride"] = stride;
    ctx->saved_data["padding"] = padding;
    ctx->saved_data["k"] = k;
    ctx->saved_data["groups"] = groups;
    ctx->saved_data["bias"] = qb.defined();
    save_request(ctx, grad_request);
    return at::convolution(qx, qw, qb, {stride, stride}, {padding, padding}, {1, 1}, false, {0, 0},
                           k * groups);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& qx = saved[0];
    const at::Tensor& qw = saved[1];
    const std::int64_t s = ctx->saved_data["stride"].toInt(),
                       p = ctx->saved_data["padding"].toInt(), k = ctx->saved_data["k"].toInt();
    // Convolution groups: k nodes times each node's channel groups. Ranges stay per node (k).
    const std::int64_t conv_groups = k * ctx->saved_data["groups"].toInt();
    const bool bias = ctx->saved_data["bias"].toBool();
    const at::Tensor gy = grad[0].contiguous(qx.suggest_memory_format());
    const std::vector<std::int64_t> bias_sizes{qw.size(0)};
    // Weight (and bias) gradient: the float output gradient, the quantized input.
    at::Tensor grad_w, grad_b;
    if (ctx->saved_data["bf16_weight_grad"].toBool()) {
      grad_w = conv_weight_gradient(gy, qx, qw, s, p, conv_groups, WeightGrad::kBf16);
      if (bias) grad_b = gy.sum({0, 2, 3});
    } else {
      std::tie(std::ignore, grad_w, grad_b) = at::convolution_backward(
          gy, qx, qw, bias ? at::OptionalIntArrayRef(bias_sizes) : c10::nullopt, {s, s}, {p, p},
          {1, 1}, false, {0, 0}, conv_groups, {false, true, bias});
    }
    // Layer gradient: the output gradient at grad_bits. None for a first layer, whose input
    // (the images) needs none: neither its quantization nor its convolution runs.
    at::Tensor grad_x;
    if (ctx->needs_input_grad(0)) {
      const at::Tensor gq = quantized_output_gradient(gy, k, load_request(ctx))
                                .contiguous(qx.suggest_memory_format());
      grad_x = conv_input_grad(gq, qx, qw, s, p, conv_groups);
    }
    return {grad_x,       grad_w,       bias ? grad_b : at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

struct BifurcatedLinear : torch::autograd::Function<BifurcatedLinear> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& qx, const at::Tensor& qw,
                            const at::Tensor& qb_or_empty, const QuantizeRequest& grad_request,
                            WeightGrad weight_grad) {
    const at::Tensor qb = qb_or_empty.numel() > 0 ? qb_or_empty : at::Tensor();
    ctx->save_for_backward({qx, qw});
    ctx->saved_data["bias"] = qb.defined();
    ctx->saved_data["bf16_weight_grad"] = weight_grad == WeightGrad::kBf16;
    save_request(ctx, grad_request);
    const at::Tensor weight_t = qw.transpose(1, 2);  // [k, in, out]
    return qb.defined() ? at::baddbmm(qb.unsqueeze(1), qx, weight_t) : at::bmm(qx, weight_t);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& qx = saved[0];                            // [k, b, in]
    const at::Tensor& qw = saved[1];                            // [k, out, in]
    const at::Tensor gy = grad[0].contiguous();                 // [k, b, out]
    const at::Tensor grad_w =
        ctx->saved_data["bf16_weight_grad"].toBool()
            ? linear_weight_gradient(gy, qx, WeightGrad::kBf16)
            : at::bmm(gy.transpose(1, 2), qx);  // [k, out, in]
    const at::Tensor grad_b = ctx->saved_data["bias"].toBool() ? gy.sum(1) : at::Tensor();
    at::Tensor grad_x;  // [k, b, in]; none for a first layer (as the convolution's)
    if (ctx->needs_input_grad(0)) {
      grad_x = at::bmm(quantized_output_gradient(gy, qx.size(0), load_request(ctx)), qw);
    }
    return {grad_x, grad_w, grad_b, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor bifurcated_conv2d(const at::Tensor& qx, const at::Tensor& qw, const at::Tensor& qb,
                             std::int64_t stride, std::int64_t padding, std::int64_t k,
                             const QuantizeRequest& grad_request, std::int64_t groups,
                             WeightGrad weight_grad) {
  // Custom autograd functions take defined tensors only: no bias travels as an empty tensor.
  return BifurcatedConv2d::apply(qx, qw, qb.defined() ? qb : at::empty({0}, qx.options()), stride,
                                 padding, k, grad_request, groups, weight_grad);
}

at::Tensor bifurcated_linear(const at::Tensor& qx, const at::Tensor& qw, const at::Tensor& qb,
                             const QuantizeRequest& grad_request, WeightGrad weight_grad) {
  return BifurcatedLinear::apply(qx, qw, qb.defined() ? qb : at::empty({0}, qx.options()),
                                 grad_request, weight_grad);
}

}  // namespace lpdt::quant
