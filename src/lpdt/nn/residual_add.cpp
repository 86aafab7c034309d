#include "lpdt/nn/residual_add.h"

#include "lpdt/nn/quantized_params.h"
#include "lpdt/nn/tracing_layer.h"
#include "lpdt/quant/fake_quant_ops.h"

namespace lpdt::nn {

ResidualAdd::ResidualAdd(Registry& registry, const std::string& name,
                         const quant::QuantOptions& quant)
    : name_(name), quant_(quant) {
  if (!quant.low_precision()) return;
  quantize_residual_.emplace(registry, join_name(name, "quantize_residual"), quant);
  quantize_x_.emplace(registry, join_name(name, "quantize_input"), quant);
  grad_site_ = registry.add_quant_site(join_name(name, "quantize_grad"));
}

at::Tensor ResidualAdd::forward(const Context& ctx, const at::Tensor& residual,
                                const at::Tensor& x) const {
  if (ctx.trace != nullptr && x.dim() == 4) {
    if (quant_.low_precision()) {  // both summands are quantized (the reference's Qsum)
      trace_inline_op(ctx, TracedOp::kActivationQuantization, name_ + ".quantize_residual", residual);
      trace_inline_op(ctx, TracedOp::kActivationQuantization, name_ + ".quantize_input", x);
    }
    trace_inline_op(ctx, TracedOp::kSkipConnection, name_, x);
  }
  if (!quant_.low_precision()) return residual + x;
  quant::QuantizeRequest residual_request, x_request;
  const quant::NodeRange residual_range =
      quantize_residual_->measure(ctx, residual, residual_request);
  const quant::NodeRange x_range = quantize_x_->measure(ctx, x, x_request);
  return quant::fake_quantized_sum(residual, residual_range, residual_request, x, x_range,
                                   x_request, ctx.k, gradient_request(ctx, quant_, grad_site_));
}

}  // namespace lpdt::nn
