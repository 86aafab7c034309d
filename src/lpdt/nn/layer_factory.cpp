#include "lpdt/nn/layer_factory.h"

#include "lpdt/core/error.h"
#include "lpdt/nn/linear.h"
#include "lpdt/nn/q_conv2d.h"
#include "lpdt/nn/q_linear.h"
#include "lpdt/nn/range_batch_norm.h"
#include "lpdt/nn/range_evonorm.h"

namespace lpdt::nn {

LayerFactory::LayerFactory(Registry& registry, NormKind norm, std::int64_t groups,
                           const quant::QuantOptions& quant)
    : registry_(registry), norm_(norm), groups_(groups), quant_(quant) {
  quant_.validate();
  if (!quant.low_precision()) return;
  // 8-bit models normalise by ranges (paper section 3): the variance-based norms map to their
  // range versions.
  switch (norm) {
    case NormKind::kEvoNorm:
      norm_ = NormKind::kRangeEvoNorm;
      break;
    case NormKind::kBatchNorm:
      norm_ = NormKind::kRangeBatchNorm;
      break;
    case NormKind::kGroupNorm:
      throw ConfigError(
          "model.norm = 'groupnorm' has no 8-bit version: with model.precision = 'int8' use "
          "evonorm (Range EvoNorm), batchnorm (Range BatchNorm) or none");
    default:
      break;
  }
}

bool LayerFactory::norm_needs_relu() const {
  return norm_ != NormKind::kEvoNorm && norm_ != NormKind::kRangeEvoNorm;
}

std::unique_ptr<Layer> LayerFactory::conv(const std::string& name,
                                          const Conv2dOptions& options) const {
  if (quant_.low_precision()) return std::make_unique<QConv2d>(registry_, name, options, quant_);
  return std::make_unique<Conv2d>(registry_, name, options);
}

std::unique_ptr<Layer> LayerFactory::linear(const std::string& name, std::int64_t in,
                                            std::int64_t out, bool bias, double weight_std) const {
  if (quant_.low_precision()) {
    return std::make_unique<QLinear>(registry_, name, in, out, quant_, bias, weight_std);
  }
  return std::make_unique<Linear>(registry_, name, in, out, bias, weight_std);
}

std::unique_ptr<Layer> LayerFactory::norm(const std::string& name, std::int64_t channels, bool relu,
                                          bool zero_gamma) const {
  switch (norm_) {
    case NormKind::kRangeEvoNorm:
      return std::make_unique<RangeEvoNorm>(registry_, name, channels, groups_, quant_, zero_gamma);
    case NormKind::kRangeBatchNorm:
      return std::make_unique<RangeBatchNorm>(registry_, name, channels, quant_, relu);
    default:
      return std::make_unique<NormAct>(registry_, name, norm_, channels, groups_, relu);
  }
}

ResidualAdd LayerFactory::residual_add(const std::string& name) const {
  return ResidualAdd(registry_, name, quant_);
}

}  // namespace lpdt::nn
