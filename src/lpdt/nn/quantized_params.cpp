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
  // Each parameter's [k, shape...] tensor with its nodes' values in dense blocks: Context::param's
  // own on CUDA (param_segments.h), a dense copy of its strided view of the rows elsewhere.
  std::vector<at::Tensor> tensors;
  tensors.reserve(ctx.layout->segments.size());
  for (std::size_t i = 0; i < ctx.layout->segments.size(); ++i) {
    const at::Tensor p = ctx.param(ParamRef{i});
    const bool dense_nodes =
        p.is_non_overlapping_and_dense() && (p.numel() == 0 || p.stride(0) * ctx.k == p.numel());
    tensors.push_back(dense_nodes ? p : p.contiguous());
  }
  cache.bits = quant.bits;
  cache.scheme = quant.scheme;
  cache.params_version = version;
  cache.segments = quant::fake_quantize_each_ste(tensors, ctx.k, quant.bits, quant.scheme);
  return &cache.segments;
}

at::Tensor quantized_param(const Context& ctx, ParamRef ref, const quant::QuantOptions& quant) {
  // On the CPU one parameter at a time: the integer backend takes codes of its weights
  // (param_codes) and quantizes only normaliser scales here, so all at once would be wasted work.
  const std::vector<at::Tensor>* segments =
      ctx.params.device().is_cpu() ? nullptr : quantized_segments(ctx, quant);
  if (segments == nullptr) return quantize_nearest(ctx.param(ref), ctx.k, quant);
  return (*segments).at(ref.index);
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
