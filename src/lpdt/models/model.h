#pragma once
// A node-batched model: built once for one node's parameter layout, run on any k nodes.
#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lpdt/nn/module.h"
#include "lpdt/quant/quant_options.h"

namespace lpdt::models {

struct ModelOptions {
  std::string arch = "resnet";  // resnet | vgg11 | lenet5 | mlp
  std::int64_t depth = 20;      // resnet: 6n+2
  std::string norm = "evonorm";
  std::int64_t groups = 8;  // EvoNorm / GroupNorm groups (reference: 8)
  std::int64_t in_channels = 3;
  std::int64_t height = 32;
  std::int64_t width = 32;
  std::int64_t num_classes = 10;
  // Precision (fp32 or the paper's 8-bit training) and how to quantize.
  quant::QuantOptions quant;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual std::string name() const = 0;
  // x: [k, b, C, H, W] float32 -> logits [k, b, num_classes] float32
  virtual at::Tensor forward(const nn::Context& ctx, const at::Tensor& x) const = 0;

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
