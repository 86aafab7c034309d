#pragma once
#include "lpdt/nn/module.h"

namespace lpdt::nn {

// EvoNorm-S0 (Liu et al. 2020; paper eq. 4), as the reference's EvoNormSample2d:
//   y = x * sigmoid(v * x) / sqrt(var_{group}(x) + eps) * gamma + beta
// with the biased variance of x over (C/G channels x H x W) of each sample's group. Sample
// statistics only: no running state, train == eval. Parameters per channel: v = 1, gamma = 1,
// beta = 0 at init.
//
// Two implementations of the same function (tested against each other):
//  - fused: one CPU kernel forward and one backward (evonorm_kernel.h), wrapped in a custom
//    autograd function; taken for float32 CPU input. First-order gradients only.
//  - composite: ATen element-wise operations differentiated by autograd; any dtype and device
//    (float64 finite-difference tests, CUDA), and double backward.
class EvoNormS0 {
 public:
  EvoNormS0(Registry& registry, const std::string& name, std::int64_t channels, std::int64_t groups,
            double eps = 1e-5);
  // x: [b, k*C, H, W] (k = ctx.k nodes, node-major channels; channels-last or contiguous) ->
  // the same shape and memory format. The fused path when uses_fused_kernel(ctx, x), else the
  // composite one.
  at::Tensor forward(const Context& ctx, const at::Tensor& x) const;
  // The two paths by name (for tests and benchmarks). forward_fused needs uses_fused_kernel.
  at::Tensor forward_fused(const Context& ctx, const at::Tensor& x) const;
  at::Tensor forward_composite(const Context& ctx, const at::Tensor& x) const;
  // x and ctx.params are float32 on one device, x 4-D: the CPU kernel, or on CUDA the CUDA
  // kernels (builds with them, channels per group dividing 256).
  bool uses_fused_kernel(const Context& ctx, const at::Tensor& x) const;

 private:
  std::int64_t channels_;
  std::int64_t groups_;
  double eps_;
  ParamRef gamma_;
  ParamRef beta_;
  ParamRef v_;
};

}  // namespace lpdt::nn
