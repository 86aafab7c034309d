#include "lpdt/nn/q_linear.h"

#include <cmath>

#include "lpdt/nn/linear.h"
#include "lpdt/nn/quantized_params.h"
#include "lpdt/quant/gradient_bifurcation.h"
#include "lpdt/quant/integer_layers.h"

namespace lpdt::nn {

QLinear::QLinear(Registry& registry, const std::string& name, std::int64_t in_features,
                 std::int64_t out_features, const quant::QuantOptions& quant, bool bias,
                 double weight_std)
    : quant_(quant), input_(registry, join_name(name, "quantize_input"), quant), has_bias_(bias) {
  const LinearParams params =
      add_linear_params(registry, name, in_features, out_features, bias, weight_std);
  weight_ = params.weight;
  bias_ = params.bias;
  grad_site_ = registry.add_quant_site(join_name(name, "quantize_grad"));
}

at::Tensor QLinear::forward(const Context& ctx, const at::Tensor& x) const {
  if (quant_.backend == quant::QuantBackend::kInteger) {
    quant::QuantizeRequest request;
    const quant::NodeRange range = input_.measure(ctx, x, request);
    const at::Tensor xc = x.contiguous();
    const quant::QuantizedTensor qx = quant::quantize(xc.detach(), ctx.k, range, request);
    const at::Tensor qb = has_bias_ ? quantized_param(ctx, bias_, quant_) : at::Tensor();
    return quant::integer_linear(xc, qx, ctx.param(weight_), param_codes(ctx, weight_, quant_), qb,
                                 gradient_request(ctx, quant_, grad_site_), quant_.weight_grad);
  }
  const at::Tensor qx = input_.forward(ctx, x);
  const at::Tensor qw = quantized_param(ctx, weight_, quant_);
  const at::Tensor qb = has_bias_ ? quantized_param(ctx, bias_, quant_) : at::Tensor();
  return quant::bifurcated_linear(qx, qw, qb, gradient_request(ctx, quant_, grad_site_),
                                  quant_.weight_grad);
}

}  // namespace lpdt::nn
