#include "lpdt/nn/multi_head_attention.h"

#include <cmath>
#include <limits>

#include "lpdt/core/error.h"
#include "lpdt/nn/many_small_matmuls.h"
#include "lpdt/nn/quantized_params.h"
#include "lpdt/quant/fake_quant_ops.h"

namespace lpdt::nn {

MultiHeadAttention::MultiHeadAttention(Registry& registry, const std::string& name,
                                       std::int64_t dim, std::int64_t heads,
                                       const quant::QuantOptions& quant, double attention_dropout)
    : dim_(dim),
      heads_(heads),
      attention_dropout_(attention_dropout),
      quant_(quant),
      q_lin_(registry, join_name(name, "q_lin"), dim, dim, quant),
      k_lin_(registry, join_name(name, "k_lin"), dim, dim, quant),
      v_lin_(registry, join_name(name, "v_lin"), dim, dim, quant),
      out_lin_(registry, join_name(name, "out_lin"), dim, dim, quant) {
  if (heads < 1 || dim % heads != 0) {
    throw ConfigError(name + ": hidden size " + std::to_string(dim) +
                      " is not divisible by the number of heads " + std::to_string(heads));
  }
  if (!quant.low_precision()) return;
  quantize_query_.emplace(registry, join_name(name, "quantize_query"), quant);
  quantize_key_.emplace(registry, join_name(name, "quantize_key"), quant);
  quantize_probs_.emplace(registry, join_name(name, "quantize_probs"), quant);
  quantize_value_.emplace(registry, join_name(name, "quantize_value"), quant);
  scores_grad_site_ = registry.add_quant_site(join_name(name, "scores.quantize_grad"));
  context_grad_site_ = registry.add_quant_site(join_name(name, "context.quantize_grad"));
}

at::Tensor MultiHeadAttention::product(const Context& ctx, const at::Tensor& a,
                                       const QuantMeasure* quantize_a, const at::Tensor& b,
                                       const QuantMeasure* quantize_b,
                                       quant::SiteId grad_site) const {
  // [..., m, n] x [..., n, p] over the leading dimensions -> [..., m, p]
  const auto matmul = [](const at::Tensor& x, const at::Tensor& y) {
    std::vector<std::int64_t> shape = x.sizes().vec();
    shape.back() = y.size(-1);
    return many_small_matmuls(x.reshape({-1, x.size(-2), x.size(-1)}),
                              y.reshape({-1, y.size(-2), y.size(-1)}))
        .view(shape);
  };
  if (!quant_.low_precision()) return matmul(a, b);
  const std::int64_t k = ctx.k, batch = a.size(1);
  // The quantizers see each node's operand as [b, rest] (one range per sequence, averaged).
  const auto quantize = [&](const at::Tensor& t, const QuantMeasure* measure) {
    return measure->forward(ctx, t.reshape({k, batch, -1})).view(t.sizes());
  };
  const at::Tensor y = matmul(quantize(a, quantize_a), quantize(b, quantize_b));
  const at::Tensor g = quant::quantize_gradient(y.reshape({k, batch, -1}), k,
                                                gradient_request(ctx, quant_, grad_site));
  return g.view(y.sizes());
}

at::Tensor MultiHeadAttention::forward(const Context& ctx, const at::Tensor& x,
                                       const at::Tensor& key_mask) const {
  const std::int64_t k = x.size(0), b = x.size(1), length = x.size(2);
  const std::int64_t head_dim = dim_ / heads_;
  // [k, b, L, dim] -> [k, b, heads, L, head_dim]
  const auto split_heads = [&](const at::Tensor& t) {
    return t.view({k, b, length, heads_, head_dim}).permute({0, 1, 3, 2, 4});
  };
  // DistilBERT scales the queries before the product: q / sqrt(head_dim).
  const at::Tensor q = split_heads(q_lin_.forward(ctx, x)) / std::sqrt(double(head_dim));
  const at::Tensor keys = split_heads(k_lin_.forward(ctx, x));
  const at::Tensor v = split_heads(v_lin_.forward(ctx, x));
  const bool q8 = quant_.low_precision();
  at::Tensor scores = product(ctx, q, q8 ? &*quantize_query_ : nullptr, keys.transpose(-1, -2),
                              q8 ? &*quantize_key_ : nullptr, scores_grad_site_);  // [k,b,h,L,L]
  // Padding keys get the lowest float (Hugging Face's masked_fill with finfo.min): exp gives 0.
  const at::Tensor padding = key_mask.logical_not().view({k, b, 1, 1, length});
  scores = scores.masked_fill(padding, std::numeric_limits<float>::lowest());
  at::Tensor probs = at::softmax(scores, -1);
  if (attention_dropout_ > 0) probs = at::dropout(probs, attention_dropout_, ctx.training);
  const at::Tensor context = product(ctx, probs, q8 ? &*quantize_probs_ : nullptr, v,
                                     q8 ? &*quantize_value_ : nullptr, context_grad_site_);
  // [k, b, heads, L, head_dim] -> [k, b, L, dim]
  const at::Tensor merged = context.permute({0, 1, 3, 2, 4}).reshape({k, b, length, dim_});
  return out_lin_.forward(ctx, merged);
}

}  // namespace lpdt::nn
