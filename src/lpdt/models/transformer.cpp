#include "lpdt/models/transformer.h"

#include "lpdt/core/error.h"

namespace lpdt::models {

TransformerOptions TransformerOptions::distilbert_base() {
  TransformerOptions o;
  o.vocab_size = 30522;
  o.max_positions = 512;
  o.hidden = 768;
  o.layers = 6;
  o.heads = 12;
  o.ffn_hidden = 3072;
  o.dropout = 0.1;
  o.attention_dropout = 0.1;
  return o;
}

TransformerClassifier::TransformerClassifier(const ModelOptions& options)
    : options_(options.transformer) {
  const TransformerOptions& t = options_;
  const quant::QuantOptions& quant = options.quant;
  name_ = options.arch + (quant.low_precision() ? "-int8" : "");
  const auto positive = [&](std::int64_t v, const std::string& what) {
    if (v < 1) {
      throw ConfigError("model." + what + " = " + std::to_string(v) + ": expected at least 1");
    }
  };
  positive(t.vocab_size, "transformer vocabulary size");
  positive(t.hidden, "transformer_hidden");
  positive(t.layers, "transformer_layers");
  if (t.layers > kMostTransformerLayers) {
    throw ConfigError("model.transformer_layers = " + std::to_string(t.layers) +
                      ": expected at most " + std::to_string(kMostTransformerLayers));
  }
  positive(t.heads, "transformer_heads");
  positive(t.ffn_hidden, "transformer_ffn");
  positive(options.num_classes, "num_classes");
  if (t.pad_id < 0 || t.pad_id >= t.vocab_size) {
    throw ConfigError("the padding token id " + std::to_string(t.pad_id) +
                      " is outside the vocabulary of " + std::to_string(t.vocab_size) + " tokens");
  }
  if (t.dropout < 0 || t.dropout >= 1 || t.attention_dropout < 0 || t.attention_dropout >= 1) {
    throw ConfigError("transformer dropout must be in [0, 1)");
  }
  // Hugging Face's names (DistilBertForSequenceClassification, "distilbert." prefix dropped).
  word_embeddings_.emplace(registry_, "embeddings.word_embeddings", t.vocab_size, t.hidden, quant);
  position_embeddings_.emplace(registry_, "embeddings.position_embeddings", t.max_positions,
                               t.hidden, quant);
  embeddings_layer_norm_.emplace(registry_, "embeddings.LayerNorm", t.hidden, quant);
  for (std::int64_t i = 0; i < t.layers; ++i) {
    const std::string prefix = "transformer.layer." + std::to_string(i);
    Block block;
    block.attention.emplace(registry_, prefix + ".attention", t.hidden, t.heads, quant,
                            t.attention_dropout);
    block.attention_add.emplace(registry_, prefix + ".attention_add", quant);
    block.sa_layer_norm.emplace(registry_, prefix + ".sa_layer_norm", t.hidden, quant);
    block.lin1.emplace(registry_, prefix + ".ffn.lin1", t.hidden, t.ffn_hidden, quant);
    block.lin2.emplace(registry_, prefix + ".ffn.lin2", t.ffn_hidden, t.hidden, quant);
    block.ffn_add.emplace(registry_, prefix + ".ffn_add", quant);
    block.output_layer_norm.emplace(registry_, prefix + ".output_layer_norm", t.hidden, quant);
    blocks_.push_back(std::move(block));
  }
  pre_classifier_.emplace(registry_, "pre_classifier", t.hidden, t.hidden, quant);
  classifier_.emplace(registry_, "classifier", t.hidden, options.num_classes, quant);
}

at::Tensor TransformerClassifier::add(const nn::Context& ctx, const nn::ResidualAdd& adder,
                                      const at::Tensor& a, const at::Tensor& b) const {
  // The quantized add sees each node's sequences as [k, b, L * D] (per-sequence ranges).
  const std::int64_t k = a.size(0), batch = a.size(1);
  return adder.forward(ctx, a.reshape({k, batch, -1}), b.reshape({k, batch, -1})).view(a.sizes());
}

at::Tensor TransformerClassifier::forward(const nn::Context& ctx, const at::Tensor& tokens) const {
  const TransformerOptions& t = options_;
  if (tokens.dim() != 3 || tokens.size(0) != ctx.k || tokens.scalar_type() != at::kLong) {
    std::ostringstream got;
    got << tokens.sizes() << " " << tokens.scalar_type();
    throw UserError(name_ + " takes token ids [k, b, L] int64 (a text dataset); got " + got.str());
  }
  const std::int64_t length = tokens.size(2);
  if (length > t.max_positions) {
    throw ConfigError(name_ + ": sequences of " + std::to_string(length) +
                      " tokens are longer than its " + std::to_string(t.max_positions) +
                      " positions: lower data.max_length");
  }
  const at::Tensor key_mask = tokens.ne(t.pad_id);  // [k, b, L]
  // [k, b, L, D]: word embeddings plus each node's positions 0..L-1.
  at::Tensor h = word_embeddings_->forward(ctx, tokens) +
                 position_embeddings_->first_rows(ctx, length).unsqueeze(1);
  h = embeddings_layer_norm_->forward(ctx, h);
  if (t.dropout > 0) h = at::dropout(h, t.dropout, ctx.training);
  for (const Block& block : blocks_) {
    // As DistilBERT: dropout on the attention probabilities and the feed-forward output only.
    const at::Tensor attended = block.attention->forward(ctx, h, key_mask);
    h = block.sa_layer_norm->forward(ctx, add(ctx, *block.attention_add, attended, h));
    at::Tensor ffn = block.lin2->forward(ctx, at::gelu(block.lin1->forward(ctx, h)));
    if (t.dropout > 0) ffn = at::dropout(ffn, t.dropout, ctx.training);
    h = block.output_layer_norm->forward(ctx, add(ctx, *block.ffn_add, ffn, h));
  }
  // The first position ([CLS]) summarises the sequence: [k, b, 1, D].
  at::Tensor pooled = at::relu(pre_classifier_->forward(ctx, h.narrow(2, 0, 1)));
  if (t.dropout > 0) pooled = at::dropout(pooled, t.dropout, ctx.training);
  return classifier_->forward(ctx, pooled).squeeze(2);  // [k, b, classes]
}

}  // namespace lpdt::models
