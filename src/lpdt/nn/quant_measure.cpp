#include "lpdt/nn/quant_measure.h"

#include <torch/types.h>
#include <torch/utils.h>

#include "lpdt/quant/fake_quant_ops.h"

namespace lpdt::nn {

QuantMeasure::QuantMeasure(Registry& registry, const std::string& name,
                           const quant::QuantOptions& options)
    : options_(options) {
  if (options.ranges_as_params) {
    running_min_param_ = registry.add_param(join_name(name, "running_min"), {1}, ParamInit::zeros(),
                                            /*trainable=*/false);
    running_max_param_ = registry.add_param(join_name(name, "running_max"), {1}, ParamInit::zeros(),
                                            /*trainable=*/false);
  } else {
    running_min_ = registry.add_buffer(join_name(name, "running_min"), {}, 0.0);
    running_max_ = registry.add_buffer(join_name(name, "running_max"), {}, 0.0);
  }
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
  // [k] views of the running range. As parameters: a view of the parameter storage without
  // autograd's version counter (variable_data), so that updating it in place does not invalidate
  // tensors saved for backward from the same [k, P] parameters.
  at::Tensor running_min, running_max;
  if (options_.ranges_as_params) {
    const LayerSegment& lo = ctx.layout->segments.at(running_min_param_.index);
    const LayerSegment& hi = ctx.layout->segments.at(running_max_param_.index);
    const at::Tensor storage = ctx.params.variable_data();
    running_min = storage.narrow(1, lo.offset, 1).view({ctx.k});
    running_max = storage.narrow(1, hi.offset, 1).view({ctx.k});
  } else {
    running_min = ctx.buffer(running_min_);
    running_max = ctx.buffer(running_max_);
  }
  if (ctx.training) {
    request.rounding = quant::Rounding::kStochastic;
    torch::NoGradGuard no_grad;
    range = quant::sample_mean_range_updating(x.detach(), ctx.k, running_min, running_max,
                                              options_.range_momentum);
  } else {
    range = {running_min.reshape({ctx.k}), running_max.reshape({ctx.k})};
    request.rounding = options_.eval_rounding;
  }
  return range;
}

}  // namespace lpdt::nn
