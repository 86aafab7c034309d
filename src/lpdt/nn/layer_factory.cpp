#include "lpdt/nn/layer_factory.h"

#include "lpdt/core/error.h"
#include "lpdt/nn/linear.h"
#include "lpdt/nn/q_conv2d.h"
#include "lpdt/nn/q_linear.h"
#include "lpdt/nn/range_batch_norm.h"
#include "lpdt/nn/range_evonorm.h"
#include "lpdt/nn/tracing_layer.h"

namespace lpdt::nn {

LayerFactory::LayerFactory(Registry& registry, NormKind norm, std::int64_t groups,
                           const quant::QuantOptions& quant, ResidualInit residual_init)
    : registry_(registry), norm_(norm), groups_(groups), quant_(quant),
      residual_init_(residual_init) {
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
  std::unique_ptr<Layer> layer;
  if (quant_.low_precision()) {
    layer = std::make_unique<QConv2d>(registry_, name, options, quant_);
  } else {
    Conv2dOptions arithmetic = options;
    arithmetic.bfloat16 = quant_.precision == quant::Precision::kBf16;
    layer = std::make_unique<Conv2d>(registry_, name, arithmetic);
  }
  TracedLayer what;
  what.op = TracedOp::kConv;
  what.name = name;
  what.in_channels = options.in_channels;
  what.out_channels = options.out_channels;
  what.kernel = options.kernel;
  what.stride = options.stride;
  what.padding = options.padding;
  what.groups = options.groups;
  return std::make_unique<TracingLayer>(std::move(layer), what, quant_.low_precision());
}

std::unique_ptr<Layer> LayerFactory::linear(const std::string& name, std::int64_t in,
                                            std::int64_t out, bool bias, double weight_std) const {
  std::unique_ptr<Layer> layer;
  if (quant_.low_precision()) {
    layer = std::make_unique<QLinear>(registry_, name, in, out, quant_, bias, weight_std);
  } else {
    layer = std::make_unique<Linear>(registry_, name, in, out, bias, weight_std);
  }
  TracedLayer what;
  what.op = TracedOp::kLinear;
  what.name = name;
  what.in_channels = in;
  what.out_channels = out;
  return std::make_unique<TracingLayer>(std::move(layer), what, quant_.low_precision());
}

std::unique_ptr<Layer> LayerFactory::norm(const std::string& name, std::int64_t channels, bool relu,
                                          bool zero_gamma) const {
  std::unique_ptr<Layer> layer;
  switch (norm_) {
    case NormKind::kRangeEvoNorm:
      layer = std::make_unique<RangeEvoNorm>(registry_, name, channels, groups_, quant_, zero_gamma);
      break;
    case NormKind::kRangeBatchNorm:
      layer = std::make_unique<RangeBatchNorm>(registry_, name, channels, quant_, relu, zero_gamma);
      break;
    default:
      layer = std::make_unique<NormAct>(registry_, name, norm_, channels, groups_, relu);
  }
  if (norm_ == NormKind::kNone) return layer;  // a bare ReLU: no row in the cost tables
  // The cost tables have two norm rows: EvoNorm (either kind) and batch-norm + ReLU, which also
  // stands for group norm.
  TracedLayer what;
  what.op = (norm_ == NormKind::kEvoNorm || norm_ == NormKind::kRangeEvoNorm)
                ? TracedOp::kEvoNorm
                : TracedOp::kBatchNormRelu;
  what.name = name;
  what.in_channels = what.out_channels = channels;
  return std::make_unique<TracingLayer>(std::move(layer), what, /*quantized=*/false);
}

ResidualAdd LayerFactory::residual_add(const std::string& name) const {
  return ResidualAdd(registry_, name, quant_);
}

}  // namespace lpdt::nn
