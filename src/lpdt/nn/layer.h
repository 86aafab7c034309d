#pragma once
// The interface every single-input node-batched layer implements, so that a model can be built
// at either precision from the same code (layer_factory.h).
#include "lpdt/nn/module.h"

namespace lpdt::nn {

class Layer {
 public:
  virtual ~Layer() = default;
  // Shapes as the concrete layer documents: [b, k*C, H, W] channels-last for convolutional
  // layers, [k, b, F] for linear ones; float32.
  virtual at::Tensor forward(const Context& ctx, const at::Tensor& x) const = 0;
};

}  // namespace lpdt::nn
