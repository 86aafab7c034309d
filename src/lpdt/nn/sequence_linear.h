#pragma once
// A linear layer applied at every position of node-batched token sequences: the transformer's
// projections (attention q/k/v/out, feed-forward lin1/lin2).
//
// At 8 bits it is the paper's QLinear with gradient bifurcation (reference spec 7.2): weight and
// bias fake-quantized with each node's [min, max] (round to nearest), the input quantized by a
// QuantMeasure, the weight gradient from the float output gradient and the layer gradient from
// the output gradient at quant.grad_bits. The input's range is measured per sequence (the mean
// over a node's b sequences of each sequence's min/max), as QuantMeasure measures per image in a
// convolutional network: a per-token range would clip far more often.
#include <optional>

#include "lpdt/nn/linear.h"
#include "lpdt/nn/module.h"
#include "lpdt/nn/quant_measure.h"
#include "lpdt/quant/quant_options.h"

namespace lpdt::nn {

class SequenceLinear {
 public:
  // weight [out, in] ~ N(0, weight_std), bias [out] zero (BERT's initialisation; pretrained
  // weights usually replace it).
  SequenceLinear(Registry& registry, const std::string& name, std::int64_t in_features,
                 std::int64_t out_features, const quant::QuantOptions& quant,
                 double weight_std = 0.02);
  // x: [k, b, L, in] float32 -> [k, b, L, out] float32
  at::Tensor forward(const Context& ctx, const at::Tensor& x) const;

  std::int64_t in_features() const { return in_features_; }
  std::int64_t out_features() const { return out_features_; }

 private:
  std::string name_;
  std::int64_t in_features_;
  std::int64_t out_features_;
  quant::QuantOptions quant_;
  std::optional<QuantMeasure> input_;  // 8 bits only
  ParamRef weight_;
  ParamRef bias_;
  quant::SiteId grad_site_ = 0;
};

}  // namespace lpdt::nn
