#include "lpdt/nn/norm_act.h"

#include "lpdt/core/error.h"

namespace lpdt::nn {

NormKind parse_norm_kind(const std::string& name) {
  if (name == "evonorm") return NormKind::kEvoNorm;
  if (name == "batchnorm") return NormKind::kBatchNorm;
  if (name == "groupnorm") return NormKind::kGroupNorm;
  if (name == "rangeevonorm") return NormKind::kRangeEvoNorm;
  if (name == "rangebatchnorm") return NormKind::kRangeBatchNorm;
  if (name == "none") return NormKind::kNone;
  throw ConfigError(
      "model.norm = '" + name +
      "' is not a normalisation: expected one of evonorm, batchnorm, groupnorm, rangeevonorm, "
      "rangebatchnorm, none");
}

std::string to_string(NormKind kind) {
  switch (kind) {
    case NormKind::kEvoNorm:
      return "evonorm";
    case NormKind::kBatchNorm:
      return "batchnorm";
    case NormKind::kGroupNorm:
      return "groupnorm";
    case NormKind::kRangeEvoNorm:
      return "rangeevonorm";
    case NormKind::kRangeBatchNorm:
      return "rangebatchnorm";
    case NormKind::kNone:
      return "none";
  }
  return "?";
}

NormAct::NormAct(Registry& registry, const std::string& name, NormKind kind, std::int64_t channels,
                 std::int64_t groups, bool relu)
    : kind_(kind), relu_(relu) {
  switch (kind) {
    case NormKind::kEvoNorm:
      evonorm_.emplace(registry, name, channels, groups);
      break;
    case NormKind::kBatchNorm:
      batch_norm_.emplace(registry, name, channels);
      break;
    case NormKind::kGroupNorm:
      group_norm_.emplace(registry, name, channels, groups);
      break;
    case NormKind::kNone:
      break;
    case NormKind::kRangeEvoNorm:
    case NormKind::kRangeBatchNorm:
      LPDT_CHECK(false, "NormAct: range norms are separate layers (use LayerFactory)");
  }
}

at::Tensor NormAct::forward(const Context& ctx, const at::Tensor& x) const {
  switch (kind_) {
    case NormKind::kEvoNorm:
      return evonorm_->forward(ctx, x);
    case NormKind::kBatchNorm: {
      at::Tensor y = batch_norm_->forward(ctx, x);
      return relu_ ? at::relu(y) : y;
    }
    case NormKind::kGroupNorm: {
      at::Tensor y = group_norm_->forward(ctx, x);
      return relu_ ? at::relu(y) : y;
    }
    case NormKind::kNone:
      return relu_ ? at::relu(x) : x;
    case NormKind::kRangeEvoNorm:
    case NormKind::kRangeBatchNorm:
      break;
  }
  return x;
}

}  // namespace lpdt::nn
