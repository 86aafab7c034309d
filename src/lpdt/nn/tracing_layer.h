#pragma once
// Cost-model tracing (core/layer_trace.h): a layer that records what it runs, with its input's
// shape, in nn::Context::trace when a pass sets one, and otherwise only forwards to the layer it
// wraps. LayerFactory wraps every layer it builds, so the cost model follows the real models.
#include <memory>
#include <optional>

#include "lpdt/core/layer_trace.h"
#include "lpdt/nn/layer.h"

namespace lpdt::nn {

class TracingLayer : public Layer {
 public:
  // what: the layer's row (op, name, channels, kernel, stride, padding); batch, height, width and
  // saved_per_sample are filled from the input at each traced pass. quantized: an 8-bit conv or
  // linear layer, which also quantizes its input activations and its weights (Table 7).
  TracingLayer(std::unique_ptr<Layer> layer, TracedLayer what, bool quantized);

  // x: as the wrapped layer takes it ([b, k*C, H, W] or [k, b, F]).
  at::Tensor forward(const Context& ctx, const at::Tensor& x) const override;

 private:
  std::unique_ptr<Layer> layer_;
  TracedLayer what_;
  bool quantized_;
};

// Records a pooling or residual step that models run inline (no Layer object).
// x: [b, k*C, H, W] float32, the op's input; `channels` per node are x.size(1) / ctx.k.
// stride 0: the same as kernel (non-overlapping pools).
void trace_inline_op(const Context& ctx, TracedOp op, const std::string& name, const at::Tensor& x,
                     std::int64_t kernel = 1, std::int64_t stride = 0);

}  // namespace lpdt::nn
