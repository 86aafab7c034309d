#pragma once
#include <optional>

#include "lpdt/models/model.h"
#include "lpdt/nn/layer.h"

namespace lpdt::models {

// VGG-11 (cfg A; Simonyan & Zisserman 2014) for 32x32 inputs with the paper's 512-wide
// classifier (reference vgg.py, spec section 6): conv3x3 (with bias) + norm per layer, five
// 2x2 max pools, then Dropout(0.5) -> Linear(512, 512) -> ReLU -> Linear(512, classes).
// 9,496,522 parameters with EvoNorm and 10 classes. At 8 bits (reference spec 7.5): bias-free
// QConv2d + Range EvoNorm, QLinear classifier.
class Vgg11 : public Model {
 public:
  explicit Vgg11(const ModelOptions& options);
  std::string name() const override { return name_; }
  at::Tensor forward(const nn::Context& ctx, const at::Tensor& x) const override;
  bool draws_from_global_generator() const override { return true; }  // Dropout(0.5)

 private:
  struct Stage {
    std::unique_ptr<nn::Layer> conv;
    std::unique_ptr<nn::Layer> norm;
    bool pool = false;  // a max pool instead of a conv
  };
  std::vector<Stage> stages_;
  std::string name_;
  std::unique_ptr<nn::Layer> fc1_;
  std::unique_ptr<nn::Layer> fc2_;
};

}  // namespace lpdt::models
