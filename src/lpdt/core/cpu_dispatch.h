#pragma once
// Runtime CPU dispatch for hot loops, two ways. One binary runs AVX-512 code on the machines that
// have it (x86-64-v4: AVX-512 F/BW/DQ/VL, e.g. 64-bit integer multiplies for the
// stochastic-rounding hash), AVX2 code on those that have that (x86-64-v3: AVX2, FMA, BMI2) and
// baseline x86-64 elsewhere, with no -march=native.
//
// 1. LPDT_CPU_CLONES, for plain C++ loops written to auto-vectorise (no calls, restrict pointers):
//    GCC compiles the function once per level and picks the best one the CPU supports when the
//    program starts. The files that use it build with -fno-trapping-math (CMakeLists.txt), without
//    which GCC vectorises a loop holding a clamp or a select only for AVX-512.
//
// 2. run_simd_kernel<Kernel>(args...), for code written with explicit GCC vectors, whose width
//    has to follow the level: a vector wider than the target's registers is lowered one element
//    at a time through the stack wherever it is compared, selected or converted (measured on an
//    AVX2 CPU: sixteen-lane min/max reductions ran as scalar vminss with a store per lane,
//    docs/benchmarks.md, "AVX2 CPUs"). Kernel is a struct with
//        template <int kLanes> [[gnu::always_inline]] static R run(Args...);
//    run with kSimdFloatLanes of each level: 16 float lanes for AVX-512, 8 for AVX2, 4 for
//    baseline x86-64 (SSE2), each instantiation compiled for its level. Unlike clones, the level
//    is chosen per call from simd_level(), so tests run every level the CPU has
//    (ScopedSimdLevel).
#include <utility>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LPDT_CPU_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define LPDT_TARGET_X86_64_V4 __attribute__((target("arch=x86-64-v4")))
#define LPDT_TARGET_X86_64_V3 __attribute__((target("arch=x86-64-v3")))
#define LPDT_HAVE_SIMD_LEVELS 1
#else
#define LPDT_CPU_CLONES
#define LPDT_TARGET_X86_64_V4
#define LPDT_TARGET_X86_64_V3
#define LPDT_HAVE_SIMD_LEVELS 0
#endif

namespace lpdt {

enum class SimdLevel : int { kBaseline = 0, kAvx2 = 1, kAvx512 = 2 };

// Float lanes of one register at each level.
template <SimdLevel kLevel>
inline constexpr int kSimdFloatLanes = kLevel == SimdLevel::kAvx512 ? 16
                                       : kLevel == SimdLevel::kAvx2 ? 8
                                                                    : 4;

// The same at run time.
int simd_float_lanes(SimdLevel level);

// The best level this CPU runs (always kBaseline off x86-64 GCC builds).
SimdLevel cpu_simd_level();
// Every level this CPU runs, baseline first (tests run each kernel at all of them).
std::vector<SimdLevel> cpu_simd_levels();
// The level run_simd_kernel takes: the CPU's, or a lower one while a ScopedSimdLevel lives.
SimdLevel simd_level();
// "avx512", "avx2" or "baseline" (recorded with every run, exp/trainer.cpp).
const char* simd_level_name(SimdLevel level);

// For tests: while it lives, run_simd_kernel runs `level`'s code, or the CPU's best where the
// CPU has less. Process-wide, since kernels run on LibTorch's worker threads; not for use while
// another thread runs kernels.
class ScopedSimdLevel {
 public:
  explicit ScopedSimdLevel(SimdLevel level);
  ~ScopedSimdLevel();
  ScopedSimdLevel(const ScopedSimdLevel&) = delete;
  ScopedSimdLevel& operator=(const ScopedSimdLevel&) = delete;

 private:
  int previous_;
};

// A GCC vector of kLanes elements of T (an alias template cannot take the attribute with a
// dependent size, a member typedef can).
template <typename T, int kLanes>
struct SimdVector {
  typedef T type __attribute__((vector_size(kLanes * sizeof(T))));
};
template <typename T, int kLanes>
using Simd = typename SimdVector<T, kLanes>::type;

namespace detail {
template <typename Kernel, typename... Args>
LPDT_TARGET_X86_64_V4 decltype(auto) run_avx512(Args&&... args) {
  return Kernel::template run<kSimdFloatLanes<SimdLevel::kAvx512>>(std::forward<Args>(args)...);
}
template <typename Kernel, typename... Args>
LPDT_TARGET_X86_64_V3 decltype(auto) run_avx2(Args&&... args) {
  return Kernel::template run<kSimdFloatLanes<SimdLevel::kAvx2>>(std::forward<Args>(args)...);
}
template <typename Kernel, typename... Args>
decltype(auto) run_baseline(Args&&... args) {
  return Kernel::template run<kSimdFloatLanes<SimdLevel::kBaseline>>(std::forward<Args>(args)...);
}
}  // namespace detail

// Kernel::run<lanes>(args...) compiled for simd_level() (see the top of this file).
template <typename Kernel, typename... Args>
decltype(auto) run_simd_kernel(Args&&... args) {
#if LPDT_HAVE_SIMD_LEVELS
  switch (simd_level()) {
    case SimdLevel::kAvx512:
      return detail::run_avx512<Kernel>(std::forward<Args>(args)...);
    case SimdLevel::kAvx2:
      return detail::run_avx2<Kernel>(std::forward<Args>(args)...);
    case SimdLevel::kBaseline:
      break;
  }
#endif
  return detail::run_baseline<Kernel>(std::forward<Args>(args)...);
}

}  // namespace lpdt
