#pragma once
// EvoNorm-S0 (nn/evonorm_kernel.h gives the equations) as CUDA kernels: forward and backward each
// take a statistics pass and an output pass over the activations; a channels-last tensor's blocks
// each hold a tile of channels and a part of the pixels (pixel_parts.h), their partial sums
// combined in a fixed order. The ATen composite version runs about ten
// element-wise and reduction kernels over the whole activation forward and twenty backward, and
// bound the float32 GPU step by memory traffic (docs/benchmarks.md, "GPU").
//
// Plain C++ (no LibTorch): evonorm_kernel_cuda.cpp passes device pointers and the current stream.
// A tensor [b, K*C, H, W] is seen as [samples, channels, pixels] with element (n, c, p) at
// n * sample + c * channel + p * pixel: any dense 4-D layout whose H and W fold into one pixel
// stride (contiguous NCHW, channels-last).
#include <cstdint>

namespace lpdt::nn::cuda_kernels {

struct Strides {
  std::int64_t sample = 0, channel = 0, pixel = 0;
};

struct EvoNormShape {
  std::int64_t samples = 1, channels = 1, pixels = 1, channels_per_group = 1;
};

// The kernels give each thread of a block one channel of its group, so channels_per_group must
// divide the block's thread count (256): 1, 2, 4, ..., 256.
bool evonorm_s0_supports(std::int64_t channels_per_group);

// Doubles of scratch space evonorm_s0_forward needs.
std::int64_t evonorm_s0_forward_scratch(const EvoNormShape& shape);

// x, y: strides xs (y is written with x's strides); v, gamma, beta: [channels] contiguous;
// mean, rstd: [samples, channels / channels_per_group] contiguous, written; scratch:
// evonorm_s0_forward_scratch(shape) doubles.
void evonorm_s0_forward(const float* x, const Strides& xs, const float* v, const float* gamma,
                        const float* beta, float* y, float* mean, float* rstd, double* scratch,
                        const EvoNormShape& shape, double eps, void* stream);

// Doubles of scratch space evonorm_s0_backward needs.
std::int64_t evonorm_s0_backward_scratch(const EvoNormShape& shape);

// dy: strides dys; x: strides xs (dx is written with x's strides); mean, rstd: as the forward
// wrote them; dv, dgamma, dbeta: [channels], written (sums over samples in sample order, in
// double: the same for any launch configuration).
void evonorm_s0_backward(const float* dy, const Strides& dys, const float* x, const Strides& xs,
                         const float* v, const float* gamma, const float* mean, const float* rstd,
                         float* dx, float* dv, float* dgamma, float* dbeta, double* scratch,
                         const EvoNormShape& shape, void* stream);

}  // namespace lpdt::nn::cuda_kernels
