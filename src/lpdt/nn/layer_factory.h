#pragma once
// Builds a model's layers at the precision its options ask for, so that one model definition
// gives both the full-precision network and the paper's 8-bit one (reference spec 7.5):
//   fp32: Conv2d, Linear, the chosen norm (+ ReLU where the norm is not EvoNorm), plain add;
//   bf16: the same, with bfloat16 convolutions (Conv2dOptions::bfloat16);
//   int8: QConv2d, QLinear, Range EvoNorm for "evonorm" (Range BatchNorm + ReLU for
//         "batchnorm"), quantized residual add. Every layer is quantized, first and last included.
#include <memory>

#include "lpdt/nn/conv2d.h"
#include "lpdt/nn/layer.h"
#include "lpdt/nn/norm_act.h"
#include "lpdt/nn/residual_add.h"
#include "lpdt/nn/residual_init.h"
#include "lpdt/quant/quant_options.h"

namespace lpdt::nn {

class LayerFactory {
 public:
  // A ConfigError when the norm has no version at this precision (group norm in 8 bits).
  LayerFactory(Registry& registry, NormKind norm, std::int64_t groups,
               const quant::QuantOptions& quant,
               ResidualInit residual_init = ResidualInit::kReference);

  std::unique_ptr<Layer> conv(const std::string& name, const Conv2dOptions& options) const;
  std::unique_ptr<Layer> linear(const std::string& name, std::int64_t in, std::int64_t out,
                                bool bias = true, double weight_std = 0.0) const;
  // The normalisation-activation after a convolution. zero_gamma: gamma starts at 0 (8-bit
  // ResNet's last norm of a residual branch, as the reference).
  std::unique_ptr<Layer> norm(const std::string& name, std::int64_t channels, bool relu,
                              bool zero_gamma = false) const;
  ResidualAdd residual_add(const std::string& name) const;

  bool low_precision() const { return quant_.low_precision(); }
  // Whether the last norm of a residual branch starts with gamma = 0 (ResidualInit).
  bool zero_residual_gamma() const {
    return low_precision() && residual_init_ == ResidualInit::kReference;
  }
  // The norm actually built (e.g. kRangeEvoNorm for "evonorm" at 8 bits).
  NormKind norm_kind() const { return norm_; }
  // Whether a ReLU follows the norm (EvoNorm variants gate by themselves).
  bool norm_needs_relu() const;

 private:
  Registry& registry_;
  NormKind norm_;
  std::int64_t groups_;
  quant::QuantOptions quant_;
  ResidualInit residual_init_;
};

}  // namespace lpdt::nn
