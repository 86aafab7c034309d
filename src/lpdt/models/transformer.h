#pragma once
// A BERT-style transformer encoder with a sequence-classification head, node-batched: Hugging
// Face's DistilBertForSequenceClassification (Sanh et al. 2019) with the same parameter names, so
// that pretrained weights load by name (models/pretrained.h).
//
//   embeddings: word + position -> LayerNorm (-> dropout)
//   layers x N (post-norm): x = LN(x + Attention(x)); x = LN(x + W2 GELU(W1 x))
//   head: h = [CLS] position's output -> ReLU(pre_classifier h) (-> dropout) -> classifier
//
// "distilbert" is DistilBERT-base (6 layers, hidden 768, 12 heads, feed-forward 3072, 512
// positions, 66M parameters with the 30,522-token BERT vocabulary); "transformer" is the same
// network at the sizes model.transformer_* give, for CPU runs.
//
// At 8 bits (docs/quantization.md, "Transformers"): every linear layer is an 8-bit layer with
// gradient bifurcation, both attention products take 8-bit operands, the embedding tables and
// every weight are quantized per node, and the residual adds are quantized adds; softmax, GELU and
// the LayerNorm statistics stay in float32.
#include <optional>

#include "lpdt/models/model.h"
#include "lpdt/nn/embedding.h"
#include "lpdt/nn/layer_norm.h"
#include "lpdt/nn/multi_head_attention.h"
#include "lpdt/nn/residual_add.h"
#include "lpdt/nn/sequence_linear.h"

namespace lpdt::models {

class TransformerClassifier : public Model {
 public:
  // ConfigError: a vocabulary or sequence length that does not fit the options, hidden size not
  // divisible by heads.
  explicit TransformerClassifier(const ModelOptions& options);
  std::string name() const override { return name_; }
  // tokens: [k, b, L] int64 (padded with options.transformer.pad_id; position 0 is [CLS])
  // -> logits [k, b, num_classes] float32
  at::Tensor forward(const nn::Context& ctx, const at::Tensor& tokens) const override;

  const TransformerOptions& options() const { return options_; }
  bool draws_from_global_generator() const override {
    return options_.dropout > 0 || options_.attention_dropout > 0;
  }

 private:
  struct Block {
    std::optional<nn::MultiHeadAttention> attention;
    std::optional<nn::LayerNorm> sa_layer_norm;
    std::optional<nn::SequenceLinear> lin1, lin2;
    std::optional<nn::LayerNorm> output_layer_norm;
    std::optional<nn::ResidualAdd> attention_add, ffn_add;
  };
  // a + b at the model's precision. a, b: [k, b, L, D]
  at::Tensor add(const nn::Context& ctx, const nn::ResidualAdd& adder, const at::Tensor& a,
                 const at::Tensor& b) const;

  std::string name_;
  TransformerOptions options_;
  std::optional<nn::Embedding> word_embeddings_, position_embeddings_;
  std::optional<nn::LayerNorm> embeddings_layer_norm_;
  std::vector<Block> blocks_;
  std::optional<nn::SequenceLinear> pre_classifier_, classifier_;
};

}  // namespace lpdt::models
