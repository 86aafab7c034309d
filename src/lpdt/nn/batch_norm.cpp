#include "lpdt/nn/batch_norm.h"

#include "lpdt/core/error.h"

namespace lpdt::nn {

BatchNorm2d::BatchNorm2d(Registry& registry, const std::string& name, std::int64_t channels,
                         double momentum, double eps)
    : channels_(channels), momentum_(momentum), eps_(eps) {
  gamma_ = registry.add_param(join_name(name, "weight"), {channels}, ParamInit::ones());
  beta_ = registry.add_param(join_name(name, "bias"), {channels}, ParamInit::zeros());
  running_mean_ = registry.add_buffer(join_name(name, "running_mean"), {channels}, 0.0);
  running_var_ = registry.add_buffer(join_name(name, "running_var"), {channels}, 1.0);
}

at::Tensor BatchNorm2d::forward(const Context& ctx, const at::Tensor& x) const {
  const std::int64_t kc = ctx.k * channels_;
  // Buffers are contiguous [k, C]; their [k*C] views are updated in place by batch_norm.
  at::Tensor mean = ctx.buffer(running_mean_).view({kc});
  at::Tensor var = ctx.buffer(running_var_).view({kc});
  return at::batch_norm(x, ctx.param(gamma_).reshape({kc}), ctx.param(beta_).reshape({kc}), mean,
                        var, ctx.training, momentum_, eps_, /*cudnn_enabled=*/true);
}

GroupNorm::GroupNorm(Registry& registry, const std::string& name, std::int64_t channels,
                     std::int64_t groups, double eps)
    : channels_(channels), groups_(std::min(groups, channels)), eps_(eps) {
  if (channels % groups_ != 0) {
    throw ConfigError("GroupNorm '" + name + "': " + std::to_string(channels) +
                      " channels are not divisible into " + std::to_string(groups_) +
                      " groups; choose model.groups dividing every layer's width");
  }
  gamma_ = registry.add_param(join_name(name, "weight"), {channels}, ParamInit::ones());
  beta_ = registry.add_param(join_name(name, "bias"), {channels}, ParamInit::zeros());
}

at::Tensor GroupNorm::forward(const Context& ctx, const at::Tensor& x) const {
  const std::int64_t kc = ctx.k * channels_;
  return at::group_norm(x, ctx.k * groups_, ctx.param(gamma_).reshape({kc}),
                        ctx.param(beta_).reshape({kc}), eps_);
}

}  // namespace lpdt::nn
