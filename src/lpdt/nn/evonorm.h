#pragma once
#include "lpdt/nn/module.h"

namespace lpdt::nn {

// EvoNorm-S0 (Liu et al. 2020; paper eq. 4), as the reference's EvoNormSample2d:
//   y = x * sigmoid(v * x) / sqrt(var_{group}(x) + eps) * gamma + beta
// with the biased variance of x over (C/G channels x H x W) of each sample's group. Sample
// statistics only: no running state, train == eval. Parameters per channel: v = 1, gamma = 1,
// beta = 0 at init.
class EvoNormS0 {
 public:
  EvoNormS0(Registry& registry, const std::string& name, std::int64_t channels, std::int64_t groups,
            double eps = 1e-5);
  // x: [b, k*C, H, W] float32 -> same shape
  at::Tensor forward(const Context& ctx, const at::Tensor& x) const;

 private:
  std::int64_t channels_;
  std::int64_t groups_;
  double eps_;
  ParamRef gamma_;
  ParamRef beta_;
  ParamRef v_;
};

}  // namespace lpdt::nn
