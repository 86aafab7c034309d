#pragma once
// Node-batched multi-head self-attention (Vaswani et al. 2017), as DistilBERT's
// MultiHeadSelfAttention: q, k, v and output projections, scaled dot products, padding keys
// masked out.
//
// At 8 bits every product runs on 8-bit operands: the four projections are SequenceLinear layers
// (8-bit inputs and weights, gradient bifurcation), and the two activation-by-activation products
// (q k^T and softmax(.) v) quantize both operands with their own QuantMeasure and pass back layer
// gradients quantized to grad_bits (the output gradient is quantized once, so both operands'
// gradients are products of 8-bit values). The softmax itself runs in float32 on the dequantized
// scores: exp over a range of tens of units needs more than 8 bits, and its output (probabilities
// in [0, 1]) is quantized again before the second product. docs/quantization.md.
#include <optional>

#include "lpdt/nn/quant_measure.h"
#include "lpdt/nn/sequence_linear.h"

namespace lpdt::nn {

class MultiHeadAttention {
 public:
  // dim divisible by heads. Parameter names as Hugging Face's DistilBERT: q_lin, k_lin, v_lin,
  // out_lin under `name`.
  MultiHeadAttention(Registry& registry, const std::string& name, std::int64_t dim,
                     std::int64_t heads, const quant::QuantOptions& quant,
                     double attention_dropout = 0.0);
  // x: [k, b, L, dim] float32; key_mask: [k, b, L] bool, true on real tokens (keys that may be
  // attended to) -> [k, b, L, dim] float32
  at::Tensor forward(const Context& ctx, const at::Tensor& x, const at::Tensor& key_mask) const;

 private:
  // An activation-by-activation product at 8 bits: a and b quantized, output gradient quantized.
  // a: [k, b, ..., m, n], b: [k, b, ..., n, p] -> [k, b, ..., m, p]
  at::Tensor product(const Context& ctx, const at::Tensor& a, const QuantMeasure* quantize_a,
                     const at::Tensor& b, const QuantMeasure* quantize_b,
                     quant::SiteId grad_site) const;

  std::int64_t dim_;
  std::int64_t heads_;
  double attention_dropout_;
  quant::QuantOptions quant_;
  SequenceLinear q_lin_, k_lin_, v_lin_, out_lin_;
  // 8 bits only: the operands of the two products.
  std::optional<QuantMeasure> quantize_query_, quantize_key_, quantize_probs_, quantize_value_;
  quant::SiteId scores_grad_site_ = 0;
  quant::SiteId context_grad_site_ = 0;
};

}  // namespace lpdt::nn
