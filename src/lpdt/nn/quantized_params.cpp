#include "lpdt/nn/quantized_params.h"

#include "lpdt/quant/fake_quant_ops.h"

namespace lpdt::nn {

at::Tensor quantize_nearest(const at::Tensor& x, std::int64_t k, const quant::QuantOptions& quant) {
  quant::QuantizeRequest request;
  request.bits = quant.bits;
  request.scheme = quant.scheme;
  request.rounding = quant::Rounding::kNearest;
  return quant::fake_quantize_ste(x, k, quant::tensor_range(x.detach(), k), request);
}

at::Tensor quantized_param(const Context& ctx, ParamRef ref, const quant::QuantOptions& quant) {
  return quantize_nearest(ctx.param(ref), ctx.k, quant);
}

quant::QuantizedTensor param_codes(const Context& ctx, ParamRef ref,
                                   const quant::QuantOptions& quant) {
  const at::Tensor p = ctx.param(ref).detach();
  quant::QuantizeRequest request;
  request.bits = quant.bits;
  request.scheme = quant.scheme;
  request.rounding = quant::Rounding::kNearest;
  return quant::quantize(p, ctx.k, quant::tensor_range(p, ctx.k), request);
}

quant::QuantizeRequest gradient_request(const Context& ctx, const quant::QuantOptions& quant,
                                        quant::SiteId site) {
  quant::QuantizeRequest request;
  request.bits = quant.grad_bits;
  request.scheme = quant.scheme;
  request.rounding = quant::Rounding::kStochastic;
  request.key = ctx.draws;
  request.site = site;
  return request;
}

}  // namespace lpdt::nn
