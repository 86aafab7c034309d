// The measured float32 arithmetic peak: positive, finite and within what any CPU can do.
#include "lpdt/core/fma_peak.h"

#include <gtest/gtest.h>

#include <cmath>

namespace lpdt {
namespace {

TEST(FmaPeak, IsAPlausibleRate) {
  const double one = measured_fma_peak_gflops(1, 0.05);
  EXPECT_TRUE(std::isfinite(one));
  // Any x86-64 core runs at least one 4-lane multiply-add per nanosecond (8 GFLOP/s), and none
  // made so far runs 100 times a 64-lane, 4 GHz one.
  EXPECT_GT(one, 8.0);
  EXPECT_LT(one, 64 * 2 * 4.0 * 100);
}

TEST(FmaPeak, RejectsBadArguments) {
  EXPECT_THROW(measured_fma_peak_gflops(0), std::exception);
  EXPECT_THROW(measured_fma_peak_gflops(1, 0.0), std::exception);
}

}  // namespace
}  // namespace lpdt
