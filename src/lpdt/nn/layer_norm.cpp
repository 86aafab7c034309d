#include "lpdt/nn/layer_norm.h"

#include "lpdt/core/error.h"
#include "lpdt/nn/quantized_params.h"

namespace lpdt::nn {

LayerNorm::LayerNorm(Registry& registry, const std::string& name, std::int64_t dim,
                     const quant::QuantOptions& quant, double eps)
    : name_(name), dim_(dim), eps_(eps), quant_(quant) {
  // Hugging Face's names for a LayerNorm's parameters.
  gamma_ = registry.add_param(join_name(name, "weight"), {dim}, ParamInit::ones());
  beta_ = registry.add_param(join_name(name, "bias"), {dim}, ParamInit::zeros());
}

at::Tensor LayerNorm::forward(const Context& ctx, const at::Tensor& x) const {
  LPDT_CHECK(x.dim() >= 2 && x.size(0) == ctx.k && x.size(-1) == dim_,
             name_ + ": expected x [k, ..., " + std::to_string(dim_) + "]");
  const bool q = quant_.low_precision();
  const at::Tensor gamma = q ? quantized_param(ctx, gamma_, quant_) : ctx.param(gamma_);
  const at::Tensor beta = q ? quantized_param(ctx, beta_, quant_) : ctx.param(beta_);
  // [k, dim] -> [k, 1, ..., 1, dim] to broadcast over x's middle dimensions.
  std::vector<std::int64_t> shape(x.dim(), 1);
  shape.front() = ctx.k;
  shape.back() = dim_;
  const at::Tensor normalised = at::layer_norm(x, {dim_}, {}, {}, eps_);
  return at::addcmul(beta.view(shape), normalised, gamma.view(shape));
}

}  // namespace lpdt::nn
