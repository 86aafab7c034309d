#pragma once
#include <optional>

#include "lpdt/models/model.h"
#include "lpdt/nn/layer.h"

namespace lpdt::models {

// LeNet-5 (LeCun et al. 1998) with ReLU and max pooling: a small convolutional model for quick
// and many-node runs. conv5x5(C->6, pad 2) -> pool -> conv5x5(6->16) -> pool -> 120 -> 84 -> out.
class LeNet5 : public Model {
 public:
  explicit LeNet5(const ModelOptions& options);
  std::string name() const override { return name_; }
  at::Tensor forward(const nn::Context& ctx, const at::Tensor& x) const override;

 private:
  std::string name_;
  std::unique_ptr<nn::Layer> conv1_, conv2_, fc1_, fc2_, fc3_;
};

// A two-hidden-layer perceptron (200 units each, ReLU) on flattened inputs.
class Mlp : public Model {
 public:
  explicit Mlp(const ModelOptions& options);
  std::string name() const override { return name_; }
  at::Tensor forward(const nn::Context& ctx, const at::Tensor& x) const override;

 private:
  std::string name_;
  std::unique_ptr<nn::Layer> fc1_, fc2_, fc3_;
};

}  // namespace lpdt::models
