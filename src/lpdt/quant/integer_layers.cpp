#include "lpdt/quant/integer_layers.h"

#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/types.h>

#include "lpdt/quant/request_io.h"
#include "lpdt/quant/weight_gradient.h"

namespace lpdt::quant {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

void save_geometry(AutogradContext* ctx, const ConvGeometry& g) {
  ctx->saved_data["batch"] = g.batch;
  ctx->saved_data["in_channels"] = g.in_channels;
  ctx->saved_data["out_channels"] = g.out_channels;
  ctx->saved_data["height"] = g.height;
  ctx->saved_data["width"] = g.width;
  ctx->saved_data["kernel"] = g.kernel;
  ctx->saved_data["stride"] = g.stride;
  ctx->saved_data["padding"] = g.padding;
  ctx->saved_data["groups"] = g.groups;
}

ConvGeometry load_geometry(AutogradContext* ctx) {
  ConvGeometry g;
  g.batch = ctx->saved_data["batch"].toInt();
  g.in_channels = ctx->saved_data["in_channels"].toInt();
  g.out_channels = ctx->saved_data["out_channels"].toInt();
  g.height = ctx->saved_data["height"].toInt();
  g.width = ctx->saved_data["width"].toInt();
  g.kernel = ctx->saved_data["kernel"].toInt();
  g.stride = ctx->saved_data["stride"].toInt();
  g.padding = ctx->saved_data["padding"].toInt();
  g.groups = ctx->saved_data["groups"].toInt();
  return g;
}

QuantizedTensor quantized_gradient(const at::Tensor& grad, std::int64_t k,
                                   const QuantizeRequest& request) {
  const at::Tensor g = canonical_layout(grad);
  return quantize(g, k, tensor_range(g, k), request);
}

struct IntegerConv2d : torch::autograd::Function<IntegerConv2d> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& qb_or_empty, const at::Tensor& x_codes,
                            const at::Tensor& x_scale, const at::Tensor& x_zero,
                            const at::Tensor& w_codes, const at::Tensor& w_scale,
                            const at::Tensor& w_zero, const ConvGeometry& g, std::int64_t k,
                            const QuantizeRequest& grad_request, WeightGrad weight_grad) {
    const QuantizedTensor qx{x_codes, x_scale, x_zero}, qw{w_codes, w_scale, w_zero};
    const at::Tensor qb = qb_or_empty.numel() > 0 ? qb_or_empty : at::Tensor();
    ctx->save_for_backward({x_codes, x_scale, x_zero, w_codes, w_scale, w_zero});
    ctx->saved_data["bias"] = qb.defined();
    ctx->saved_data["bf16_weight_grad"] = weight_grad == WeightGrad::kBf16;
    ctx->saved_data["k"] = k;
    save_geometry(ctx, g);
    save_request(ctx, grad_request);
    return int8_conv2d(qx, qw, qb, g, k);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    RECORD_FUNCTION("lpdt::integer_conv2d_backward", std::vector<c10::IValue>());
    const auto s = ctx->get_saved_variables();
    const QuantizedTensor qx{s[0], s[1], s[2]}, qw{s[3], s[4], s[5]};
    const ConvGeometry g = load_geometry(ctx);
    const std::int64_t k = ctx->saved_data["k"].toInt();
    const at::Tensor gy = grad[0].contiguous(at::MemoryFormat::ChannelsLast);
    // Weight gradient in float (quant.weight_grad): the float output gradient and the
    // dequantized input codes.
    const at::Tensor x_real = dequantize(qx, k);
    const at::Tensor w_real = dequantize(qw, k)
                                  .view({k * g.out_channels, g.group_in(), g.kernel, g.kernel})
                                  .contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor grad_w = conv_weight_gradient(
        gy, x_real, w_real, g.stride, g.padding, k * g.groups,
        ctx->saved_data["bf16_weight_grad"].toBool() ? WeightGrad::kBf16 : WeightGrad::kFp32);
    const at::Tensor grad_b = ctx->saved_data["bias"].toBool() ? gy.sum({0, 2, 3}) : at::Tensor();
    // Layer gradient in int8: the output gradient at 8 bits through the weight codes; not for a
    // first layer, whose input (the data) needs none. Its draws are counter-based per site, so
    // skipping them changes no other layer's.
    const at::Tensor grad_x =
        ctx->needs_input_grad(0)
            ? int8_conv2d_input_grad(quantized_gradient(gy, k, load_request(ctx)), qw, g, k)
            : at::Tensor();
    return {grad_x,       grad_w.view(qw.codes.sizes()),
            grad_b,       at::Tensor(),
            at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

struct IntegerLinear : torch::autograd::Function<IntegerLinear> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& qb_or_empty, const at::Tensor& x_codes,
                            const at::Tensor& x_scale, const at::Tensor& x_zero,
                            const at::Tensor& w_codes, const at::Tensor& w_scale,
                            const at::Tensor& w_zero, const QuantizeRequest& grad_request,
                            WeightGrad weight_grad) {
    const QuantizedTensor qx{x_codes, x_scale, x_zero}, qw{w_codes, w_scale, w_zero};
    const at::Tensor qb = qb_or_empty.numel() > 0 ? qb_or_empty : at::Tensor();
    ctx->save_for_backward({x_codes, x_scale, x_zero, w_codes, w_scale, w_zero});
    ctx->saved_data["bias"] = qb.defined();
    ctx->saved_data["bf16_weight_grad"] = weight_grad == WeightGrad::kBf16;
    save_request(ctx, grad_request);
    return int8_linear(qx, qw, qb);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto s = ctx->get_saved_variables();
    const QuantizedTensor qx{s[0], s[1], s[2]}, qw{s[3], s[4], s[5]};
    const std::int64_t k = qx.codes.size(0);
    const at::Tensor gy = grad[0].contiguous();                                // [k, b, out]
    const at::Tensor grad_w = linear_weight_gradient(  // [k, out, in]
        gy, dequantize(qx, k),
        ctx->saved_data["bf16_weight_grad"].toBool() ? WeightGrad::kBf16 : WeightGrad::kFp32);
    const at::Tensor grad_b = ctx->saved_data["bias"].toBool() ? gy.sum(1) : at::Tensor();
    const at::Tensor grad_x =
        ctx->needs_input_grad(0)
            ? int8_linear_input_grad(quantized_gradient(gy, k, load_request(ctx)), qw)
            : at::Tensor();
    return {grad_x,       grad_w,       grad_b,       at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor or_empty(const at::Tensor& t, const at::Tensor& like) {
  // Custom autograd functions take defined tensors only: no bias travels as an empty tensor.
  return t.defined() ? t : at::empty({0}, like.options());
}

}  // namespace

at::Tensor integer_conv2d(const at::Tensor& x, const QuantizedTensor& qx, const at::Tensor& w,
                          const QuantizedTensor& qw, const at::Tensor& qb, const ConvGeometry& g,
                          std::int64_t k, const QuantizeRequest& grad_request,
                          WeightGrad weight_grad) {
  RECORD_FUNCTION("lpdt::integer_conv2d", std::vector<c10::IValue>());
  return IntegerConv2d::apply(x, w, or_empty(qb, x), qx.codes, qx.scale, qx.zero_point, qw.codes,
                              qw.scale, qw.zero_point, g, k, grad_request, weight_grad);
}

at::Tensor integer_linear(const at::Tensor& x, const QuantizedTensor& qx, const at::Tensor& w,
                          const QuantizedTensor& qw, const at::Tensor& qb,
                          const QuantizeRequest& grad_request, WeightGrad weight_grad) {
  return IntegerLinear::apply(x, w, or_empty(qb, x), qx.codes, qx.scale, qx.zero_point, qw.codes,
                              qw.scale, qw.zero_point, grad_request, weight_grad);
}

}  // namespace lpdt::quant
