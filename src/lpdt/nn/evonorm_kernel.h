#pragma once
// A fused CPU kernel for EvoNorm-S0 (Liu et al. 2020, paper eq. 4), forward and backward.
//
// For sample n, channel c in group g (groups are `channels_per_group` consecutive channels) and
// pixel p:
//   mean[n,g], var[n,g] = biased mean and variance of x over (the group's channels, H, W)
//   r[n,g] = 1 / sqrt(var[n,g] + eps)
//   s = sigmoid(v[c] * x),  num = x * s
//   y = num * r[n,g] * gamma[c] + beta[c]
// The ATen composite (evonorm.cpp) runs this as a chain of about ten element-wise operations
// forward and twenty backward, each a pass over the activations; here each direction is two
// passes per sample while the sample is in cache (docs/benchmarks.md, "What we learned").
//
// Backward, from dy = dL/dy (N_g = H * W * channels_per_group):
//   dbeta[c]  = sum_{n,p} dy
//   dgamma[c] = sum_{n,p} dy * num * r
//   dnum      = dy * gamma * r
//   dv[c]     = sum_{n,p} dnum * x^2 * s * (1 - s)                (d num / d v = x^2 s (1 - s))
//   dr[n,g]   = sum_{p, c in g} dy * gamma * num
//   dvar[n,g] = -0.5 * dr * r^3                                   (d r / d var = -r^3 / 2)
//   dx        = dnum * (s + v x s (1 - s)) + dvar * 2 (x - mean) / N_g
// (the mean's own term vanishes: sum_i (x_i - mean) = 0).
//
// Tensor arguments: x and dy are [b, K*C, H, W] float32 on the CPU, either channels-last (memory
// order b, H, W, K*C: what nn::nodes_to_channels and the convolutions produce, the fast path) or
// contiguous NCHW (a second loop order); any other strides are copied to contiguous NCHW first.
// Outputs y and dx have x's memory format. v, gamma, beta: [K*C] float32 (any strides), one value
// per channel. mean, rstd: [b, K*C / channels_per_group] float32 contiguous.
#include <ATen/ATen.h>

#include <cstdint>

namespace lpdt::nn {

struct EvoNormForward {
  at::Tensor y;     // [b, K*C, H, W] float32, x's memory format
  at::Tensor mean;  // [b, groups] float32: mean[n,g]
  at::Tensor rstd;  // [b, groups] float32: r[n,g] = 1 / sqrt(var + eps)
};

struct EvoNormGradients {
  at::Tensor dx;      // [b, K*C, H, W] float32, x's memory format
  at::Tensor dv;      // [K*C] float32
  at::Tensor dgamma;  // [K*C] float32
  at::Tensor dbeta;   // [K*C] float32
};

// Whether the fused CPU kernel handles x: a 4-D float32 CPU tensor. Anything else (float64 for the
// finite-difference tests; CUDA tensors, see evonorm_s0_cuda_kernel_supports) does not.
bool evonorm_s0_kernel_supports(const at::Tensor& x);

// The fused kernel. Parallel over samples (at::parallel_for); per-channel parameter gradients are
// summed per sample in double and combined in sample order, so results do not depend on the
// thread count. Statistics are accumulated in double.
EvoNormForward evonorm_s0_forward_cpu(const at::Tensor& x, const at::Tensor& v,
                                      const at::Tensor& gamma, const at::Tensor& beta,
                                      std::int64_t channels_per_group, double eps);
// mean, rstd: as evonorm_s0_forward_cpu returned them for this x.
EvoNormGradients evonorm_s0_backward_cpu(const at::Tensor& dy, const at::Tensor& x,
                                         const at::Tensor& v, const at::Tensor& gamma,
                                         const at::Tensor& mean, const at::Tensor& rstd,
                                         std::int64_t channels_per_group);

// The same operation on CUDA tensors (cuda/evonorm_s0_kernels.h), in builds with the CUDA kernels
// (a CUDA LibTorch and nvcc): one block per (sample, group), statistics and parameter gradients
// summed in double (the latter in sample order: deterministic). x and dy may each be channels-last
// or contiguous NCHW (anything else is copied to x's format); channels_per_group must divide 256.
bool evonorm_s0_cuda_kernel_supports(const at::Tensor& x, std::int64_t channels_per_group);
EvoNormForward evonorm_s0_forward_cuda(const at::Tensor& x, const at::Tensor& v,
                                       const at::Tensor& gamma, const at::Tensor& beta,
                                       std::int64_t channels_per_group, double eps);
EvoNormGradients evonorm_s0_backward_cuda(const at::Tensor& dy, const at::Tensor& x,
                                          const at::Tensor& v, const at::Tensor& gamma,
                                          const at::Tensor& mean, const at::Tensor& rstd,
                                          std::int64_t channels_per_group);

// Scalar references of the same equations: plain loops over logical indices (any strides),
// everything in double, std::exp; outputs float32 (y, dx contiguous NCHW). For the tests.
EvoNormForward evonorm_s0_forward_reference(const at::Tensor& x, const at::Tensor& v,
                                            const at::Tensor& gamma, const at::Tensor& beta,
                                            std::int64_t channels_per_group, double eps);
EvoNormGradients evonorm_s0_backward_reference(const at::Tensor& dy, const at::Tensor& x,
                                               const at::Tensor& v, const at::Tensor& gamma,
                                               const at::Tensor& mean, const at::Tensor& rstd,
                                               std::int64_t channels_per_group);

// The vectorisable exp the kernel's sigmoid uses (exposed for its accuracy test): relative error
// below 2e-7 on [-87.3, 88]; arguments are clamped to that range (exp(-87.3) ~ 1.2e-38, the
// smallest normal float; exp(88) ~ 1.7e38), which leaves sigmoid's limits 0 and 1 correct.
float evonorm_fast_exp(float z);

}  // namespace lpdt::nn
