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

const std::vector<at::Tensor>* quantized_segments(const Context& ctx,
                                                  const quant::QuantOptions& quant) {
  Context::QuantizedParams& cache = ctx.quantized_params;
  const std::uint32_t version = ctx.params._version();
  if (!cache.segments.empty()) {
    if (cache.bits != quant.bits || cache.scheme != quant.scheme) return nullptr;
    if (cache.params_version == version) return &cache.segments;
  }
  std::vector<quant::ColumnSegment> columns;
  std::vector<std::int64_t> sizes;
  columns.reserve(ctx.layout->segments.size());
  sizes.reserve(ctx.layout->segments.size());
  for (const LayerSegment& s : ctx.layout->segments) {
    columns.push_back({s.offset, s.numel});
    sizes.push_back(s.numel);
  }
  const at::Tensor all =
      quant::fake_quantize_segments_ste(ctx.params, columns, quant.bits, quant.scheme);
  cache.bits = quant.bits;
  cache.scheme = quant.scheme;
  cache.params_version = version;
  cache.segments = all.split_with_sizes(sizes, 1);
  return &cache.segments;
}

at::Tensor quantized_param(const Context& ctx, ParamRef ref, const quant::QuantOptions& quant) {
  // On the CPU one parameter at a time: the integer backend takes codes of its weights
  // (param_codes) and quantizes only normaliser scales here, so all at once would be wasted work.
  const std::vector<at::Tensor>* segments =
      ctx.params.device().is_cpu() ? nullptr : quantized_segments(ctx, quant);
  if (segments == nullptr) return quantize_nearest(ctx.param(ref), ctx.k, quant);
  const LayerSegment& seg = ctx.layout->segments.at(ref.index);
  std::vector<std::int64_t> shape{ctx.k};
  shape.insert(shape.end(), seg.shape.begin(), seg.shape.end());
  return (*segments)[ref.index].view(shape);
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
