#include "lpdt/nn/range_batch_norm.h"

#include <torch/types.h>
#include <torch/utils.h>

#include "lpdt/nn/flat_group_scales.h"
#include "lpdt/nn/quantized_params.h"
#include "lpdt/nn/range_evonorm.h"
#include "lpdt/quant/fake_quant_ops.h"

namespace lpdt::nn {

RangeBatchNorm::RangeBatchNorm(Registry& registry, const std::string& name, std::int64_t channels,
                               const quant::QuantOptions& quant, bool relu, bool zero_gamma)
    : channels_(channels), quant_(quant), relu_(relu) {
  if (quant.low_precision()) input_.emplace(registry, join_name(name, "quantize_input"), quant);
  gamma_ = registry.add_param(join_name(name, "weight"), {channels},
                              zero_gamma ? ParamInit::zeros() : ParamInit::ones());
  beta_ = registry.add_param(join_name(name, "bias"), {channels}, ParamInit::zeros());
  running_mean_ = registry.add_buffer(join_name(name, "running_mean"), {channels}, 0.0);
  running_scale_ = registry.add_buffer(join_name(name, "running_scale"), {channels}, 1.0);
  if (quant.low_precision()) grad_site_ = registry.add_quant_site(join_name(name, "quantize_grad"));
}

at::Tensor constant_channels_take_largest_scale(const at::Tensor& scale, std::int64_t k) {
  const at::Tensor per_node = scale.view({k, -1});
  return flat_entries_take_largest_scale(per_node, per_node.ge(kFlatRangeScale), /*node_dim=*/0)
      .reshape(scale.sizes());
}

at::Tensor RangeBatchNorm::forward(const Context& ctx, const at::Tensor& x_in) const {
  const bool q = quant_.low_precision();
  const std::int64_t k = ctx.k, kc = k * channels_;
  const at::Tensor x =
      (q ? input_->forward(ctx, x_in) : x_in).contiguous(at::MemoryFormat::ChannelsLast);
  at::Tensor& running_mean = ctx.buffer(running_mean_);    // [k, C]
  at::Tensor& running_scale = ctx.buffer(running_scale_);  // [k, C]
  at::Tensor mean, scale;                                  // [k*C]
  if (ctx.training) {
    // Channels-last rows are the (b, h, w) positions in the reference's transpose(0, 1) order.
    const std::int64_t n = x.size(0) * x.size(2) * x.size(3);
    const at::Tensor rows = x.permute({0, 2, 3, 1}).reshape({n, kc});
    mean = rows.mean(0);
    const std::int64_t chunks = range_chunks(n), m = n / chunks;
    const at::Tensor chunked = rows.view({chunks, m, kc});
    const at::Tensor range =
        (std::get<0>(chunked.max(1)) - std::get<0>(chunked.min(1))).mean(0);  // [k*C]
    scale = constant_channels_take_largest_scale(1.0 / (range * range_scale_factor(m) + 1e-5), k);
    torch::NoGradGuard no_grad;
    const double mom = quant_.range_momentum;
    running_mean.mul_(1.0 - mom).add_(mean.detach().view({k, channels_}), mom);
    running_scale.mul_(1.0 - mom).add_(scale.detach().view({k, channels_}), mom);
  } else {
    mean = running_mean.reshape({kc});
    scale = running_scale.reshape({kc});
  }
  const auto per_channel = [&](const at::Tensor& t) { return t.reshape({1, kc, 1, 1}); };
  const auto param = [&](ParamRef ref) {
    return per_channel(q ? quantized_param(ctx, ref, quant_) : ctx.param(ref));
  };
  const at::Tensor qscale = q ? quantize_nearest(scale.view({k, channels_}), k, quant_) : scale;
  at::Tensor out = (x - per_channel(mean)) * per_channel(qscale) * param(gamma_) + param(beta_);
  out = out.contiguous(at::MemoryFormat::ChannelsLast);
  if (q) out = quant::quantize_gradient(out, k, gradient_request(ctx, quant_, grad_site_));
  return relu_ ? at::relu(out) : out;
}

}  // namespace lpdt::nn
