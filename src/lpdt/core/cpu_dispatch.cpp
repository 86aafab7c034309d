#include "lpdt/core/cpu_dispatch.h"

#include <algorithm>
#include <atomic>

namespace lpdt {
namespace {

SimdLevel detect_cpu_simd_level() {
#if LPDT_HAVE_SIMD_LEVELS
  __builtin_cpu_init();
  // The same names target_clones resolves by, so both ways of dispatch agree on a machine.
  if (__builtin_cpu_supports("x86-64-v4")) return SimdLevel::kAvx512;
  if (__builtin_cpu_supports("x86-64-v3")) return SimdLevel::kAvx2;
#endif
  return SimdLevel::kBaseline;
}

// -1: no override.
std::atomic<int> g_level_override{-1};

}  // namespace

SimdLevel cpu_simd_level() {
  static const SimdLevel level = detect_cpu_simd_level();
  return level;
}

std::vector<SimdLevel> cpu_simd_levels() {
  std::vector<SimdLevel> levels;
  for (int level = 0; level <= static_cast<int>(cpu_simd_level()); ++level) {
    levels.push_back(static_cast<SimdLevel>(level));
  }
  return levels;
}

SimdLevel simd_level() {
  const int override_level = g_level_override.load(std::memory_order_relaxed);
  if (override_level < 0) return cpu_simd_level();
  return static_cast<SimdLevel>(std::min(override_level, static_cast<int>(cpu_simd_level())));
}

int simd_float_lanes(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512:
      return kSimdFloatLanes<SimdLevel::kAvx512>;
    case SimdLevel::kAvx2:
      return kSimdFloatLanes<SimdLevel::kAvx2>;
    case SimdLevel::kBaseline:
      break;
  }
  return kSimdFloatLanes<SimdLevel::kBaseline>;
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512:
      return "avx512";
    case SimdLevel::kAvx2:
      return "avx2";
    case SimdLevel::kBaseline:
      break;
  }
  return "baseline";
}

ScopedSimdLevel::ScopedSimdLevel(SimdLevel level)
    : previous_(g_level_override.exchange(static_cast<int>(level))) {}

ScopedSimdLevel::~ScopedSimdLevel() { g_level_override.store(previous_); }

}  // namespace lpdt
