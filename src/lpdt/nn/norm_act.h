#pragma once
// The normalisation(-activation) slot of a network: where a ResNet has "BN + ReLU".
#include <memory>
#include <optional>
#include <string>

#include "lpdt/nn/batch_norm.h"
#include "lpdt/nn/evonorm.h"
#include "lpdt/nn/layer.h"

namespace lpdt::nn {

// The range norms (Banner et al. 2018; paper eq. 5) are separate layers (range_evonorm.h,
// range_batch_norm.h); LayerFactory picks them for 8-bit models.
enum class NormKind { kEvoNorm, kBatchNorm, kGroupNorm, kRangeEvoNorm, kRangeBatchNorm, kNone };

// "evonorm" | "batchnorm" | "groupnorm" | "rangeevonorm" | "rangebatchnorm" | "none"; a ConfigError
// names the accepted values.
NormKind parse_norm_kind(const std::string& name);
std::string to_string(NormKind kind);

// EvoNorm-S0 is a normalisation-activation layer by itself (its sigmoid gate is the
// non-linearity). The other norms are followed by ReLU when `relu` is set.
class NormAct : public Layer {
 public:
  NormAct(Registry& registry, const std::string& name, NormKind kind, std::int64_t channels,
          std::int64_t groups, bool relu);
  // x: [b, k*C, H, W] float32 -> same shape
  at::Tensor forward(const Context& ctx, const at::Tensor& x) const override;

 private:
  NormKind kind_;
  bool relu_;
  std::optional<EvoNormS0> evonorm_;
  std::optional<BatchNorm2d> batch_norm_;
  std::optional<GroupNorm> group_norm_;
};

}  // namespace lpdt::nn
