#pragma once
// A thread's walk over the pixels of its channel in the normalisers' CUDA kernels
// (evonorm_s0_kernels.cu, range_evonorm_kernels.cu). CUDA only.
#include <cstdint>

namespace lpdt::nn::cuda_kernels {

// Calls visit(p, load(p)) for p = first, first + step, ... < end, but loads four pixels'
// operands before visiting any: with one load in flight per thread, EvoNorm-S0's tiled kernels
// were latency-bound (an H100 profile: 34% of DRAM bandwidth, 37% of issue slots;
// docs/benchmarks.md, GPU, item 20). Visits in order, so sums come out as from the plain loop.
template <typename Load, typename Visit>
__device__ void walk_pixels(std::int64_t first, std::int64_t end, std::int64_t step, Load load,
                            Visit visit) {
  constexpr int kInFlight = 4;
  std::int64_t p = first;
  for (; p + (kInFlight - 1) * step < end; p += kInFlight * step) {
    decltype(load(p)) operands[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) operands[u] = load(p + u * step);
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) visit(p + u * step, operands[u]);
  }
  for (; p < end; p += step) visit(p, load(p));
}

}  // namespace lpdt::nn::cuda_kernels
