#pragma once
#include "lpdt/nn/module.h"
#include "lpdt/quant/affine_quantizer.h"
#include "lpdt/quant/quant_options.h"

namespace lpdt::nn {

// The reference's QuantMeasure (reference spec 7.2): fake-quantizes an activation with a per-node
// range. Training: the mean over samples of each sample's min/max, stochastic rounding, and the
// running range updated r <- (1 - m) r + m batch (m = quant.range_momentum, 0.9 as the
// reference). Evaluation: the running range, rounding quant.eval_rounding. Straight-through
// gradient. The running range is a per-node buffer (not gossiped: docs/quantization.md), or with
// quant.ranges_as_params a pair of non-trainable parameters, as the official code.
class QuantMeasure {
 public:
  QuantMeasure(Registry& registry, const std::string& name, const quant::QuantOptions& options);
  // x: [b, k*C, H, W] or [k, b, F] float32 -> fake-quantized, x's shape (canonical layout)
  at::Tensor forward(const Context& ctx, const at::Tensor& x) const;
  // The range and request forward uses (updating the running range in training), for layers
  // that quantize x to codes themselves (the integer backend).
  quant::NodeRange measure(const Context& ctx, const at::Tensor& x,
                           quant::QuantizeRequest& request) const;

 private:
  quant::QuantOptions options_;
  BufferRef running_min_;
  BufferRef running_max_;
  ParamRef running_min_param_;
  ParamRef running_max_param_;
  quant::SiteId site_;
};

}  // namespace lpdt::nn
