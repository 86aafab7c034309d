#pragma once
// Marks small functions that both the host compiler and nvcc compile (the stochastic-rounding hash,
// the SplitMix64 mix): one definition, so CUDA kernels decide exactly as the CPU loops do.
#if defined(__CUDACC__)
#define LPDT_HOST_DEVICE __host__ __device__
#else
#define LPDT_HOST_DEVICE
#endif
