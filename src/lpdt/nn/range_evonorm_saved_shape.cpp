#include "lpdt/nn/range_evonorm_saved_shape.h"

#include "lpdt/quant/request_io.h"

namespace lpdt::nn {

void save_shape(torch::autograd::AutogradContext* ctx, const RangeEvoNormShape& shape) {
  ctx->saved_data["k"] = shape.k;
  ctx->saved_data["channels"] = shape.channels;
  ctx->saved_data["groups"] = shape.groups;
  ctx->saved_data["chunks"] = shape.chunks;
  ctx->saved_data["range_factor"] = shape.range_factor;
  ctx->saved_data["quantize_output_grad"] = shape.quantize_output_grad;
  if (shape.quantize_output_grad) quant::save_request(ctx, shape.output_grad_request);
}

RangeEvoNormShape load_shape(torch::autograd::AutogradContext* ctx) {
  RangeEvoNormShape shape;
  shape.k = ctx->saved_data["k"].toInt();
  shape.channels = ctx->saved_data["channels"].toInt();
  shape.groups = ctx->saved_data["groups"].toInt();
  shape.chunks = ctx->saved_data["chunks"].toInt();
  shape.range_factor = ctx->saved_data["range_factor"].toDouble();
  shape.quantize_output_grad = ctx->saved_data["quantize_output_grad"].toBool();
  if (shape.quantize_output_grad) shape.output_grad_request = quant::load_request(ctx);
  return shape;
}

}  // namespace lpdt::nn
