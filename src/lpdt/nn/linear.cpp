#include "lpdt/nn/linear.h"

#include <cmath>

namespace lpdt::nn {

LinearParams add_linear_params(Registry& registry, const std::string& name,
                               std::int64_t in_features, std::int64_t out_features, bool bias,
                               double weight_std) {
  LinearParams params;
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  params.weight = registry.add_param(
      join_name(name, "weight"), {out_features, in_features},
      weight_std > 0 ? ParamInit::normal(weight_std) : ParamInit::uniform(-bound, bound));
  if (bias) {
    params.bias =
        registry.add_param(join_name(name, "bias"), {out_features},
                           weight_std > 0 ? ParamInit::zeros() : ParamInit::uniform(-bound, bound));
  }
  return params;
}

Linear::Linear(Registry& registry, const std::string& name, std::int64_t in_features,
               std::int64_t out_features, bool bias, double weight_std)
    : in_features_(in_features), out_features_(out_features), has_bias_(bias) {
  const LinearParams params =
      add_linear_params(registry, name, in_features, out_features, bias, weight_std);
  weight_ = params.weight;
  bias_ = params.bias;
}

at::Tensor Linear::forward(const Context& ctx, const at::Tensor& x) const {
  const at::Tensor weight_t = ctx.param(weight_).transpose(1, 2);  // [k, in, out]
  if (!has_bias_) return at::bmm(x, weight_t);
  return at::baddbmm(ctx.param(bias_).unsqueeze(1), x, weight_t);  // bias [k, 1, out]
}

}  // namespace lpdt::nn
