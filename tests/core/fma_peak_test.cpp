// The measured float32 arithmetic peak: positive, finite and within what any CPU can do.
#include "lpdt/core/fma_peak.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "lpdt/core/cpu_dispatch.h"

namespace lpdt {
namespace {

// At every vector level this CPU has (the AVX2 and baseline code too on an AVX-512 machine).
TEST(FmaPeak, IsAPlausibleRateAtEveryLevel) {
  for (const SimdLevel level : cpu_simd_levels()) {
    ScopedSimdLevel scoped(level);
    // The best of three: another process on the core (ctest runs tests side by side) can only
    // make a measurement lower.
    double one = 0;
    for (int repeat = 0; repeat < 3; ++repeat) {
      const double measured = measured_fma_peak_gflops(1, 0.05);
      EXPECT_TRUE(std::isfinite(measured));
      one = std::max(one, measured);
    }
    // Any x86-64 core runs at least one 4-lane multiply-add per nanosecond (8 GFLOP/s), and none
    // made so far runs 100 times a 64-lane, 4 GHz one.
    EXPECT_GT(one, 8.0) << simd_level_name(simd_level());
    EXPECT_LT(one, 64 * 2 * 4.0 * 100);
  }
}

TEST(FmaPeak, RejectsBadArguments) {
  EXPECT_THROW(measured_fma_peak_gflops(0), std::exception);
  EXPECT_THROW(measured_fma_peak_gflops(1, 0.0), std::exception);
}

}  // namespace
}  // namespace lpdt
