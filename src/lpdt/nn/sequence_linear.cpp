#include "lpdt/nn/sequence_linear.h"

#include "lpdt/core/error.h"
#include "lpdt/core/layer_trace.h"
#include "lpdt/nn/quantized_params.h"
#include "lpdt/quant/gradient_bifurcation.h"
#include "lpdt/quant/integer_layers.h"

namespace lpdt::nn {

SequenceLinear::SequenceLinear(Registry& registry, const std::string& name,
                               std::int64_t in_features, std::int64_t out_features,
                               const quant::QuantOptions& quant, double weight_std)
    : name_(name), in_features_(in_features), out_features_(out_features), quant_(quant) {
  if (quant.low_precision()) input_.emplace(registry, join_name(name, "quantize_input"), quant);
  const LinearParams params =
      add_linear_params(registry, name, in_features, out_features, /*bias=*/true, weight_std);
  weight_ = params.weight;
  bias_ = params.bias;
  if (quant.low_precision()) grad_site_ = registry.add_quant_site(join_name(name, "quantize_grad"));
}

at::Tensor SequenceLinear::forward(const Context& ctx, const at::Tensor& x) const {
  LPDT_CHECK(x.dim() == 4 && x.size(0) == ctx.k && x.size(3) == in_features_,
             name_ + ": expected x [k, b, L, " + std::to_string(in_features_) + "]");
  const std::int64_t k = x.size(0), b = x.size(1), length = x.size(2);
  if (ctx.trace != nullptr) {
    TracedLayer row;
    row.op = TracedOp::kLinear;
    row.name = name_;
    row.batch = b * length;  // every position is one row of the GEMM
    row.in_channels = in_features_;
    row.out_channels = out_features_;
    row.saved_per_sample = in_features_;
    ctx.trace->add(row);
  }
  const at::Tensor rows = x.reshape({k, b * length, in_features_});
  const auto back = [&](const at::Tensor& y) { return y.view({k, b, length, out_features_}); };
  if (!quant_.low_precision()) {
    const at::Tensor weight_t = ctx.param(weight_).transpose(1, 2);  // [k, in, out]
    return back(at::baddbmm(ctx.param(bias_).unsqueeze(1), rows, weight_t));
  }
  // Per-sequence ranges: the quantizers see each node's input as [b, L * in] samples.
  const at::Tensor sequences = rows.view({k, b, length * in_features_});
  const quant::QuantizeRequest grad_request = gradient_request(ctx, quant_, grad_site_);
  const at::Tensor qb = quantized_param(ctx, bias_, quant_);
  if (quant_.backend == quant::QuantBackend::kInteger) {
    quant::QuantizeRequest request;
    const quant::NodeRange range = input_->measure(ctx, sequences, request);
    quant::QuantizedTensor qx = quant::quantize(sequences.detach(), k, range, request);
    qx.codes = qx.codes.view({k, b * length, in_features_});
    return back(quant::integer_linear(rows, qx, ctx.param(weight_),
                                      param_codes(ctx, weight_, quant_), qb, grad_request,
                                      quant_.weight_grad));
  }
  const at::Tensor qx = input_->forward(ctx, sequences).view({k, b * length, in_features_});
  const at::Tensor qw = quantized_param(ctx, weight_, quant_);
  return back(quant::bifurcated_linear(qx, qw, qb, grad_request, quant_.weight_grad));
}

}  // namespace lpdt::nn
