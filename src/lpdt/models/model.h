#pragma once
// A node-batched model: built once for one node's parameter layout, run on any k nodes.
#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lpdt/nn/module.h"
#include "lpdt/nn/residual_init.h"
#include "lpdt/quant/quant_options.h"

namespace lpdt::models {

// The transformer classifiers' sizes (models/transformer.h). The defaults are a small encoder for
// CPU runs; distilbert_base() is DistilBERT-base.
struct TransformerOptions {
  std::int64_t vocab_size = 0;  // from the tokenizer's vocabulary
  std::int64_t pad_id = 0;      // [PAD]: keys at padded positions are masked out
  std::int64_t max_positions = 512;
  std::int64_t hidden = 128;
  std::int64_t layers = 2;
  std::int64_t heads = 4;
  std::int64_t ffn_hidden = 512;
  double dropout = 0.1;  // embeddings, feed-forward output and head (DistilBERT: 0.1)
  double attention_dropout = 0.1;
  static TransformerOptions distilbert_base();
};

// Layer counts beyond these are typos, not models (a depth of 2e9 would build blocks until the
// memory ran out, printing nothing): the deepest CIFAR ResNet of He et al. (2016) is
// ResNet-1202, and the largest transformers have about a hundred layers.
inline constexpr std::int64_t kDeepestCifarResNet = 1202;
inline constexpr std::int64_t kMostTransformerLayers = 256;

struct ModelOptions {
  // resnet (CIFAR, 6n+2) | resnet18 | resnet34 (ImageNet style) | mobilenetv2 | vgg11 | lenet5 |
  // mlp
  std::string arch = "resnet";
  std::int64_t depth = 20;  // resnet: 6n+2
  std::string norm = "evonorm";
  std::int64_t groups = 8;  // EvoNorm / GroupNorm groups (reference: 8)
  std::int64_t in_channels = 3;
  std::int64_t height = 32;
  std::int64_t width = 32;
  std::int64_t num_classes = 10;
  // Precision (fp32 or the paper's 8-bit training) and how to quantize.
  quant::QuantOptions quant;
  // gamma of each residual branch's last norm at the start (resnet*, mobilenetv2).
  nn::ResidualInit residual_init = nn::ResidualInit::kReference;
  // arch = "distilbert" | "transformer" only.
  TransformerOptions transformer;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual std::string name() const = 0;
  // x: [k, b, C, H, W] float32 -> logits [k, b, num_classes] float32
  virtual at::Tensor forward(const nn::Context& ctx, const at::Tensor& x) const = 0;
  // Whether a training forward draws from LibTorch's global generator (dropout). Passes side by
  // side (run.pass_workers) would then draw in an order that varies from run to run, so such a
  // model runs its passes in turn.
  virtual bool draws_from_global_generator() const { return false; }

  const nn::Registry& registry() const { return registry_; }
  const LayerLayout& layout() const { return registry_.layout(); }
  std::int64_t num_params() const { return registry_.layout().total_numel; }

  // One node's initial parameters, [P] float32, drawn from the seeded stream (seed, kInit).
  at::Tensor init_params(std::uint64_t seed) const;
  // [P] float32: 1 for trainable columns, 0 for the rest (no update, no weight decay).
  at::Tensor trainable_mask() const;
  // Fresh buffers for k nodes: each [k, shape...] float32.
  std::vector<at::Tensor> init_buffers(std::int64_t k) const;

 protected:
  nn::Registry registry_;
};

// Builds a model; a ConfigError names a bad arch / depth / input shape.
std::unique_ptr<Model> make_model(const ModelOptions& options);

// Mean cross-entropy of each node's batch, summed over nodes, so that the gradient of row i of
// the [k, P] parameters is node i's own mean-loss gradient.
// logits: [k, b, classes] float32; targets: [k, b] int64 -> scalar
at::Tensor node_batched_loss(const at::Tensor& logits, const at::Tensor& targets);

}  // namespace lpdt::models
