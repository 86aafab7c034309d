#include "lpdt/core/fma_peak.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"

namespace lpdt {
namespace {

constexpr int kAccumulators = 12;  // independent chains: enough to cover the FMA latency on 2 pipes

// `rounds` x kAccumulators x kLanes fused multiply-adds on full registers of the level's width
// (run_simd_kernel: sixteen lanes on an AVX2 CPU would be lowered through the stack and measure
// stores, not multiply-adds); returns a value that depends on all of them so that the compiler
// keeps the loop.
struct FmaRounds {
  template <int kLanes>
  [[gnu::always_inline]] static float run(long rounds, float seed) {
    using Lanes = Simd<float, kLanes>;
    Lanes acc[kAccumulators];
    const Lanes zero = {};
    const Lanes a = zero + 0.999999f, b = zero + 1e-7f * seed;
    for (int i = 0; i < kAccumulators; ++i) acc[i] = zero + seed * static_cast<float>(i);
    for (long r = 0; r < rounds; ++r) {
      for (int i = 0; i < kAccumulators; ++i) acc[i] = acc[i] * a + b;
    }
    float sum = 0;
    for (int i = 0; i < kAccumulators; ++i) {
      for (int lane = 0; lane < kLanes; ++lane) sum += acc[i][lane];
    }
    return sum;
  }
};

}  // namespace

double measured_fma_peak_gflops(int threads, double seconds) {
  LPDT_CHECK(threads >= 1 && seconds > 0, "measured_fma_peak_gflops: threads and seconds > 0");
  constexpr long kRoundsPerBatch = 1 << 16;
  const double flops_per_batch =
      2.0 * kAccumulators * simd_float_lanes(simd_level()) * static_cast<double>(kRoundsPerBatch);
  std::vector<double> gflops(static_cast<std::size_t>(threads), 0.0);
  volatile float sink = 0;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    float keep =
        run_simd_kernel<FmaRounds>(kRoundsPerBatch, 1.0f);  // warm-up: clocks up, code paged in
    const auto start = std::chrono::steady_clock::now();
    long batches = 0;
    double elapsed = 0;
    while (elapsed < seconds) {
      keep += run_simd_kernel<FmaRounds>(kRoundsPerBatch, keep * 1e-9f);
      ++batches;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    gflops[static_cast<std::size_t>(t)] =
        flops_per_batch * static_cast<double>(batches) / elapsed / 1e9;
    sink = keep;
  }
  (void)sink;
  double total = 0;
  for (double g : gflops) total += g;
  return total;
}

}  // namespace lpdt
