#include "lpdt/nn/evonorm.h"

#include <torch/csrc/autograd/custom_function.h>
#include <torch/types.h>

#include "lpdt/core/error.h"
#include "lpdt/nn/evonorm_kernel.h"
#include "lpdt/nn/node_layout.h"

namespace lpdt::nn {
namespace {

// The fused kernel as an autograd function. Saves x (alive anyway as the previous layer's
// output), v, gamma and the [b, groups] mean and r; sigmoid(v x) is recomputed in backward.
// First-order gradients only: the backward is a kernel, not differentiable operations, so a
// double backward (create_graph) is refused rather than silently treating it as constant; the
// composite path supports it.
class EvoNormS0Function : public torch::autograd::Function<EvoNormS0Function> {
 public:
  // x: [b, K*C, H, W] float32; v, gamma, beta: [K*C] float32.
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& v, const at::Tensor& gamma, const at::Tensor& beta,
                            std::int64_t channels_per_group, double eps) {
    EvoNormForward out = x.is_cuda()
                             ? evonorm_s0_forward_cuda(x, v, gamma, beta, channels_per_group, eps)
                             : evonorm_s0_forward_cpu(x, v, gamma, beta, channels_per_group, eps);
    ctx->save_for_backward({x, v, gamma, out.mean, out.rstd});
    ctx->saved_data["channels_per_group"] = channels_per_group;
    return out.y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    if (at::GradMode::is_enabled()) {
      throw UserError(
          "EvoNorm-S0's fused kernel has first-order gradients only; a double backward "
          "(create_graph) needs the composite path (EvoNormS0::forward_composite)");
    }
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const at::Tensor& dy = grad_outputs[0];
    const std::int64_t channels_per_group = ctx->saved_data["channels_per_group"].toInt();
    const auto backward = saved[0].is_cuda() ? evonorm_s0_backward_cuda : evonorm_s0_backward_cpu;
    EvoNormGradients g =
        backward(dy, saved[0], saved[1], saved[2], saved[3], saved[4], channels_per_group);
    // One gradient per forward argument; none for the two non-tensor ones.
    return {g.dx, g.dv, g.dgamma, g.dbeta, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

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

bool EvoNormS0::uses_fused_kernel(const Context& ctx, const at::Tensor& x) const {
  if (ctx.params.scalar_type() != at::kFloat || ctx.params.device() != x.device()) return false;
  return evonorm_s0_kernel_supports(x) || evonorm_s0_cuda_kernel_supports(x, channels_ / groups_);
}

at::Tensor EvoNormS0::forward(const Context& ctx, const at::Tensor& x) const {
  return uses_fused_kernel(ctx, x) ? forward_fused(ctx, x) : forward_composite(ctx, x);
}

at::Tensor EvoNormS0::forward_fused(const Context& ctx, const at::Tensor& x) const {
  LPDT_CHECK(uses_fused_kernel(ctx, x),
             "EvoNorm-S0 fused kernel: float32 CPU tensors, or CUDA tensors in a build with the "
             "CUDA kernels");
  const std::int64_t kc = x.size(1);
  LPDT_CHECK(kc == ctx.k * channels_, "EvoNorm-S0: input channels must be k * channels");
  // [k, C] views of the [k, P] parameters -> [K*C] (a copy when k > 1, whose backward scatters
  // the [K*C] gradients back into the [k, P] gradient).
  const auto per_channel = [&](ParamRef ref) { return ctx.param(ref).reshape({kc}); };
  return EvoNormS0Function::apply(x, per_channel(v_), per_channel(gamma_), per_channel(beta_),
                                  channels_ / groups_, eps_);
}

at::Tensor EvoNormS0::forward_composite(const Context& ctx, const at::Tensor& x) const {
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
