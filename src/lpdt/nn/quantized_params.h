#pragma once
// Helpers the 8-bit layers share.
#include "lpdt/nn/module.h"
#include "lpdt/quant/affine_quantizer.h"

namespace lpdt::nn {

// A parameter fake-quantized with each node's [min, max] and round-to-nearest (weights, biases,
// normaliser scales: reference spec 7.2), straight-through gradient. -> [k, shape...] float32
at::Tensor quantized_param(const Context& ctx, ParamRef ref, const quant::QuantOptions& quant);
// Every parameter of ctx fake-quantized at once with quant's bits and scheme (one kernel on CUDA),
// one [k, shape...] tensor per layout segment in the layout of ctx.param's, with a straight-through
// gradient, the same floats as quantized_param gives each one at a time; kept in
// ctx.quantized_params until params change in place. Null when ctx holds them with other bits or
// scheme. quantized_param uses it for parameters off the CPU.
const std::vector<at::Tensor>* quantized_segments(const Context& ctx,
                                                  const quant::QuantOptions& quant);
// Any node-leading [k, ...] tensor quantized the same way.
at::Tensor quantize_nearest(const at::Tensor& x, std::int64_t k, const quant::QuantOptions& quant);
// The codes of a parameter (integer backend): the same rounding as quantized_param.
quant::QuantizedTensor param_codes(const Context& ctx, ParamRef ref,
                                   const quant::QuantOptions& quant);
// What a layer's backward uses to quantize the gradient it passes on: grad_bits, stochastic,
// draws keyed by (ctx.draws, site).
quant::QuantizeRequest gradient_request(const Context& ctx, const quant::QuantOptions& quant,
                                        quant::SiteId site);

}  // namespace lpdt::nn
