#pragma once
#include "lpdt/nn/module.h"

namespace lpdt::nn {

// BatchNorm2d per node: statistics over (b, H, W) of each node's own channels, running mean and
// variance as per-node buffers (not gossiped). On [b, k*C, H, W] a plain batch norm over k*C
// channels computes exactly k separate batch norms.
class BatchNorm2d {
 public:
  BatchNorm2d(Registry& registry, const std::string& name, std::int64_t channels,
              double momentum = 0.1, double eps = 1e-5);
  // x: [b, k*C, H, W] float32 -> same shape
  at::Tensor forward(const Context& ctx, const at::Tensor& x) const;

 private:
  std::int64_t channels_;
  double momentum_;
  double eps_;
  ParamRef gamma_;
  ParamRef beta_;
  BufferRef running_mean_;
  BufferRef running_var_;
};

// GroupNorm per sample over groups of each node's channels (Wu & He 2018).
class GroupNorm {
 public:
  GroupNorm(Registry& registry, const std::string& name, std::int64_t channels, std::int64_t groups,
            double eps = 1e-5);
  // x: [b, k*C, H, W] float32 -> same shape
  at::Tensor forward(const Context& ctx, const at::Tensor& x) const;

 private:
  std::int64_t channels_;
  std::int64_t groups_;
  double eps_;
  ParamRef gamma_;
  ParamRef beta_;
};

}  // namespace lpdt::nn
