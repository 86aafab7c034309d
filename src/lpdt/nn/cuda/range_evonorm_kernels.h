#pragma once
// Range EvoNorm's fused operation (nn/range_evonorm_kernel.h, the CPU version) as CUDA kernels,
// for the range statistic (quant.range_evonorm = "reference" or "paper"). The same float
// operations in the same order as the CPU kernel (built without fused multiply-adds, as this file
// is), so the forward output and the statistic's positions are the CPU kernel's bit for bit; the
// backward's sums run in another order. The ATen composite version runs ~40 kernels per layer
// each way over the activations; these are four.
//
// Plain C++ (no LibTorch): range_evonorm_cuda.cpp passes device pointers and the current stream.
// Activations are channels-last [b, k*C, H, W] float32: element (sample n, pixel p, channel kc) at
// (n * pixels + p) * k*C + kc.
#include <cstdint>

namespace lpdt::nn::cuda_kernels {

struct RangeEvoNormGeometry {
  std::int64_t samples = 1, nodes = 1, channels = 1;  // channels per node
  std::int64_t pixels = 1, groups = 1, chunks = 1;    // groups per node, chunks per group
  float range_factor = 1.0f;
};

// The layer input: float32 values, or 8-bit codes read as (code - zero_point[node]) *
// scale[node], the values quant::dequantize gives them (8-bit models keep the codes, 1 byte per
// element, and no kernel dequantizes them into a float copy first). Set values, or the other three.
struct RangeEvoNormInput {
  const float* values = nullptr;
  const std::uint8_t* codes = nullptr;
  const float* scale = nullptr;       // [k]
  const float* zero_point = nullptr;  // [k]
};

// The range statistic of every (sample, node, group): the group's elements in NCHW order split
// into `chunks` chunks; each chunk's first max and first min in that order; scale = 1 /
// (mean_j (max_j - min_j) * factor + 1e-5). scale: [b, k, G]; arg_max, arg_min: [b, k, G, chunks]
// int32 offsets p * k*C + g * cg + channel within the (sample, node) slice, as the CPU kernel's.
void range_statistic(const RangeEvoNormInput& x, const RangeEvoNormGeometry& g, float* scale,
                     std::int32_t* arg_max, std::int32_t* arg_min, void* stream);

// out = x * hsig(x v / 6 + 1/2) * s * gamma + beta, s = the channel's group scale (qs: [b, k, G]);
// v, gamma, beta: [k*C].
void range_evonorm_output(const RangeEvoNormInput& x, const float* v, const float* qs,
                          const float* gamma, const float* beta, float* out,
                          const RangeEvoNormGeometry& g, void* stream);

// The backward of range_evonorm_output for dy: dx, and per (sample, channel) sums over pixels of
// the gradients of v, gamma, beta and the channel's group scale into partial [4, b, k*C].
void range_evonorm_backward(const float* dy, const RangeEvoNormInput& x, const float* v,
                            const float* qs, const float* gamma, float* dx, float* partial,
                            const RangeEvoNormGeometry& g, void* stream);

// The range statistic's part of dx: for every chunk of every group, d = -ds * s * s * factor /
// chunks with ds the group scale's gradient (the sum of its channels' shares in channel_grad:
// [b, k*C], partial's fourth plane of range_evonorm_backward) and s its unquantized scale (scale:
// [b, k, G]); dx[arg_max] += d, dx[arg_min] -= d.
void range_statistic_backward(const std::int32_t* arg_max, const std::int32_t* arg_min,
                              const float* channel_grad, const float* scale, float* dx,
                              const RangeEvoNormGeometry& g, void* stream);

}  // namespace lpdt::nn::cuda_kernels
