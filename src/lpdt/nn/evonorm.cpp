#include "lpdt/nn/evonorm.h"

#include "lpdt/core/error.h"
#include "lpdt/nn/node_layout.h"

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
  const std::int64_t kc = x.size(1);
  const auto per_channel = [&](ParamRef ref) { return ctx.param(ref).reshape({1, kc, 1, 1}); };
  const at::Tensor numerator =
      (x * at::sigmoid(per_channel(v_) * x)).contiguous(x.suggest_memory_format());
  // Groups are consecutive channels, so node i's groups are [i*G, (i+1)*G): no mixing.
  const std::int64_t groups = ctx.k * groups_;
  const at::Tensor std =
      (group_view(x, groups).var(group_reduce_dims(x), /*unbiased=*/false, /*keepdim=*/true) + eps_)
          .sqrt();
  const at::Tensor normalised = ungroup(group_view(numerator, groups) / std, x);
  return normalised * per_channel(gamma_) + per_channel(beta_);
}

}  // namespace lpdt::nn
