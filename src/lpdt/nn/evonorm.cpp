#include "lpdt/nn/evonorm.h"

#include "lpdt/core/error.h"

namespace lpdt::nn {

EvoNormS0::EvoNormS0(Registry& registry, const std::string& name, std::int64_t channels,
                     std::int64_t groups, double eps)
    : channels_(channels), groups_(std::min(groups, channels)), eps_(eps) {
  if (channels % groups_ != 0) {
    throw ConfigError("EvoNorm-S0 '" + name + "': " + std::to_string(channels) +
                      " channels are not divisible into " + std::to_string(groups_) +
                      " groups; choose model.groups dividing every layer's width");
  }
  gamma_ = registry.add_param(join_name(name, "weight"), {channels}, ParamInit::ones());
  beta_ = registry.add_param(join_name(name, "bias"), {channels}, ParamInit::zeros());
  v_ = registry.add_param(join_name(name, "v"), {channels}, ParamInit::ones());
}

at::Tensor EvoNormS0::forward(const Context& ctx, const at::Tensor& x) const {
  const std::int64_t b = x.size(0);
  const std::int64_t kc = x.size(1);
  const auto per_channel = [&](ParamRef ref) { return ctx.param(ref).reshape({1, kc, 1, 1}); };
  const at::Tensor numerator = x * at::sigmoid(per_channel(v_) * x);
  // Groups are consecutive channels, so node i's groups are rows [i*G, (i+1)*G): no mixing.
  const at::Tensor grouped = x.reshape({b, ctx.k * groups_, -1});
  const at::Tensor std =
      (grouped.var(/*dim=*/2, /*unbiased=*/false, /*keepdim=*/true) + eps_).sqrt();
  const at::Tensor normalised = (numerator.reshape({b, ctx.k * groups_, -1}) / std).view_as(x);
  return normalised * per_channel(gamma_) + per_channel(beta_);
}

}  // namespace lpdt::nn
