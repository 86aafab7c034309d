#include "lpdt/nn/quant_measure.h"

#include <torch/torch.h>

#include "lpdt/quant/fake_quant_ops.h"

namespace lpdt::nn {

QuantMeasure::QuantMeasure(Registry& registry, const std::string& name,
                           const quant::QuantOptions& options)
    : options_(options) {
  running_min_ = registry.add_buffer(join_name(name, "running_min"), {}, 0.0);
  running_max_ = registry.add_buffer(join_name(name, "running_max"), {}, 0.0);
  site_ = registry.add_quant_site(name);
}

at::Tensor QuantMeasure::forward(const Context& ctx, const at::Tensor& x) const {
  quant::QuantizeRequest request;
  const quant::NodeRange range = measure(ctx, x, request);
  return quant::fake_quantize_ste(x, ctx.k, range, request);
}

quant::NodeRange QuantMeasure::measure(const Context& ctx, const at::Tensor& x,
                                       quant::QuantizeRequest& request) const {
  request.bits = options_.bits;
  request.scheme = options_.scheme;
  request.key = ctx.draws;
  request.site = site_;
  quant::NodeRange range;
  at::Tensor& running_min = ctx.buffer(running_min_);  // [k]
  at::Tensor& running_max = ctx.buffer(running_max_);
  if (ctx.training) {
    range = quant::sample_mean_range(x.detach(), ctx.k);
    request.rounding = quant::Rounding::kStochastic;
    const double m = options_.range_momentum;
    torch::NoGradGuard no_grad;
    running_min.mul_(1.0 - m).add_(range.min, m);
    running_max.mul_(1.0 - m).add_(range.max, m);
  } else {
    range = {running_min.reshape({ctx.k}), running_max.reshape({ctx.k})};
    request.rounding = options_.eval_rounding;
  }
  return range;
}

}  // namespace lpdt::nn
