// Runtime dispatch of explicit-vector kernels: each level runs its own width, and tests can
// lower the level to check the narrower code on a wider CPU.
#include "lpdt/core/cpu_dispatch.h"

#include <gtest/gtest.h>

namespace lpdt {
namespace {

// Returns the lane count it was instantiated for, and the width of its vector type in floats.
struct LaneCount {
  template <int kLanes>
  [[gnu::always_inline]] static int run(int& vector_floats) {
    vector_floats = static_cast<int>(sizeof(Simd<float, kLanes>) / sizeof(float));
    return kLanes;
  }
};

TEST(CpuDispatch, RunsTheWidthOfTheLevelInUse) {
  int vector_floats = 0;
  EXPECT_EQ(run_simd_kernel<LaneCount>(vector_floats), simd_float_lanes(simd_level()));
  EXPECT_EQ(vector_floats, simd_float_lanes(simd_level()));
  EXPECT_EQ(simd_level(), cpu_simd_level());
}

TEST(CpuDispatch, ScopedLevelLowersButNeverRaisesTheLevel) {
  const SimdLevel cpu = cpu_simd_level();
  for (const SimdLevel level : {SimdLevel::kBaseline, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    ScopedSimdLevel scoped(level);
    const SimdLevel expected = static_cast<int>(level) <= static_cast<int>(cpu) ? level : cpu;
    EXPECT_EQ(simd_level(), expected) << simd_level_name(level);
    int vector_floats = 0;
    EXPECT_EQ(run_simd_kernel<LaneCount>(vector_floats), simd_float_lanes(expected));
  }
  EXPECT_EQ(simd_level(), cpu);
}

TEST(CpuDispatch, ListsTheLevelsUpToTheCpus) {
  const std::vector<SimdLevel> levels = cpu_simd_levels();
  ASSERT_FALSE(levels.empty());
  EXPECT_EQ(levels.front(), SimdLevel::kBaseline);
  EXPECT_EQ(levels.back(), cpu_simd_level());
  EXPECT_EQ(levels.size(), static_cast<std::size_t>(cpu_simd_level()) + 1);
}

TEST(CpuDispatch, LevelsHaveNamesAndWidths) {
  EXPECT_STREQ(simd_level_name(SimdLevel::kAvx512), "avx512");
  EXPECT_STREQ(simd_level_name(SimdLevel::kAvx2), "avx2");
  EXPECT_STREQ(simd_level_name(SimdLevel::kBaseline), "baseline");
  EXPECT_EQ(simd_float_lanes(SimdLevel::kAvx512), 16);
  EXPECT_EQ(simd_float_lanes(SimdLevel::kAvx2), 8);
  EXPECT_EQ(simd_float_lanes(SimdLevel::kBaseline), 4);
}

}  // namespace
}  // namespace lpdt
