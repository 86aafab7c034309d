#include "lpdt/nn/q_conv2d.h"

#include <ATen/record_function.h>

#include "lpdt/nn/quantized_params.h"
#include "lpdt/quant/gradient_bifurcation.h"
#include "lpdt/quant/integer_layers.h"

namespace lpdt::nn {

QConv2d::QConv2d(Registry& registry, const std::string& name, const Conv2dOptions& options,
                 const quant::QuantOptions& quant)
    : options_(options), quant_(quant), input_(registry, join_name(name, "quantize_input"), quant) {
  const ConvParams params = add_conv_params(registry, name, options);
  weight_ = params.weight;
  bias_ = params.bias;
  grad_site_ = registry.add_quant_site(join_name(name, "quantize_grad"));
}

at::Tensor QConv2d::forward(const Context& ctx, const at::Tensor& x) const {
  RECORD_FUNCTION("lpdt::QConv2d", std::vector<c10::IValue>());
  const std::int64_t k = ctx.k;
  if (quant_.backend == quant::QuantBackend::kInteger) {
    quant::QuantizeRequest request;
    const quant::NodeRange range = input_.measure(ctx, x, request);
    const quant::QuantizedTensor qx = quant::quantize(x.detach(), k, range, request);
    at::Tensor qb;
    if (options_.bias)
      qb = quantized_param(ctx, bias_, quant_).reshape({k * options_.out_channels});
    quant::ConvGeometry g;
    g.batch = x.size(0);
    g.in_channels = options_.in_channels;
    g.out_channels = options_.out_channels;
    g.height = x.size(2);
    g.width = x.size(3);
    g.kernel = options_.kernel;
    g.stride = options_.stride;
    g.padding = options_.padding;
    g.groups = options_.groups;
    return quant::integer_conv2d(x, qx, ctx.param(weight_), param_codes(ctx, weight_, quant_), qb,
                                 g, k, gradient_request(ctx, quant_, grad_site_),
                                 quant_.weight_grad);
  }
  const at::Tensor qx = input_.forward(ctx, x);
  const at::Tensor qw =
      quantized_param(ctx, weight_, quant_)
          .reshape({k * options_.out_channels, options_.in_channels / options_.groups,
                    options_.kernel, options_.kernel})
          .contiguous(qx.suggest_memory_format());
  at::Tensor qb;
  if (options_.bias) qb = quantized_param(ctx, bias_, quant_).reshape({k * options_.out_channels});
  return quant::bifurcated_conv2d(qx, qw, qb, options_.stride, options_.padding, k,
                                  gradient_request(ctx, quant_, grad_site_), options_.groups,
                                  quant_.weight_grad);
}

}  // namespace lpdt::nn
