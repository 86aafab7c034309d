#include "lpdt/nn/tracing_layer.h"

#include "lpdt/core/error.h"

namespace lpdt::nn {

TracingLayer::TracingLayer(std::unique_ptr<Layer> layer, TracedLayer what, bool quantized)
    : layer_(std::move(layer)), what_(std::move(what)), quantized_(quantized) {
  LPDT_CHECK(layer_ != nullptr, "TracingLayer: no layer to wrap");
}

at::Tensor TracingLayer::forward(const Context& ctx, const at::Tensor& x) const {
  if (ctx.trace == nullptr) return layer_->forward(ctx, x);
  TracedLayer row = what_;
  if (x.dim() == 3) {  // [k, b, F]: a linear layer
    row.batch = x.size(1);
    row.height = row.width = 1;
  } else {  // [b, k*C, H, W]
    LPDT_CHECK(x.dim() == 4, "TracingLayer: expected [b, k*C, H, W] or [k, b, F] input");
    row.batch = x.size(0);
    row.height = x.size(2);
    row.width = x.size(3);
  }
  row.saved_per_sample = row.in_channels * row.height * row.width;
  if (quantized_) {
    // Table 7: the 8-bit layer quantizes its input activations and its weights.
    TracedLayer activation = row;
    activation.op = TracedOp::kActivationQuantization;
    activation.name += ".quantize_input";
    activation.out_channels = row.in_channels;
    activation.kernel = activation.stride = 1;
    activation.padding = 0;
    activation.saved_per_sample = 0;
    ctx.trace->add(activation);
    TracedLayer weight = row;
    weight.op = TracedOp::kWeightQuantization;
    weight.name += ".quantize_weight";
    weight.batch = 1;
    weight.height = weight.width = 1;
    weight.saved_per_sample = 0;
    ctx.trace->add(weight);
  }
  ctx.trace->add(row);
  return layer_->forward(ctx, x);
}

void trace_inline_op(const Context& ctx, TracedOp op, const std::string& name, const at::Tensor& x,
                     std::int64_t kernel, std::int64_t stride) {
  if (ctx.trace == nullptr) return;
  LPDT_CHECK(x.dim() == 4, "trace_inline_op: expected a [b, k*C, H, W] input");
  TracedLayer row;
  row.op = op;
  row.name = name;
  row.batch = x.size(0);
  row.in_channels = row.out_channels = x.size(1) / ctx.k;
  row.height = x.size(2);
  row.width = x.size(3);
  row.kernel = kernel;
  row.stride = stride > 0 ? stride : kernel;
  // Max pooling keeps where each maximum was for its backward; the others keep nothing.
  row.saved_per_sample = op == TracedOp::kMaxPool ? row.in_channels * row.height * row.width : 0;
  ctx.trace->add(row);
}

}  // namespace lpdt::nn
