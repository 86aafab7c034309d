#include "lpdt/quant/stochastic_draws.h"

#include <bit>
#include <cstring>
#include <utility>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"
#include "lpdt/core/rng.h"

namespace lpdt::quant {

namespace {

// The first n / kLanes * kLanes draws of a window that starts on a pair (index0 even): kLanes / 2
// mixes as one vector of 64-bit lanes, read as kLanes 32-bit halves in element order; returns how
// many it wrote. kLanes floats fill one register of the level (core/cpu_dispatch.h); a wider
// vector would be lowered through the stack on a narrower CPU.
struct WholePairDraws {
  template <int kLanes>
  [[gnu::always_inline]] static std::int64_t run(std::uint64_t stream, std::uint64_t first_pair,
                                                 std::int64_t n, float* __restrict out) {
    constexpr int kPairs = kLanes / 2;
    using Mixes = Simd<std::uint64_t, kPairs>;
    using Halves = Simd<std::uint32_t, kLanes>;
    using Ints = Simd<std::int32_t, kLanes>;
    using Draws = Simd<float, kLanes>;
    // The pairs' first products p * kPairMultiplier, advanced by an add per vector: the same
    // values mod 2^64 as mix_pairs' multiply, one 64-bit multiply of three fewer per pair
    // (AVX2 has no 64-bit vector multiply; GCC emulates each with three 32-bit ones).
    Mixes scaled;
    for (int j = 0; j < kPairs; ++j) {
      scaled[j] = (first_pair + static_cast<std::uint64_t>(j)) * kPairMultiplier;
    }
    const std::uint64_t advance = static_cast<std::uint64_t>(kPairs) * kPairMultiplier;
    std::int64_t e0 = 0;
    for (; e0 + kLanes <= n; e0 += kLanes) {
      Mixes h = scaled;
      scaled += advance;
      mix_scaled_pairs(stream, h);
      Halves halves;
      std::memcpy(&halves, &h, sizeof halves);
      if constexpr (std::endian::native != std::endian::little) {
        for (int j = 0; j < kLanes; j += 2) std::swap(halves[j], halves[j + 1]);
      }
      // 24-bit values: exact as signed 32-bit integers, whose conversion every level has.
      const Ints top = reinterpret_cast<Ints>(halves >> 8);
      const Draws d = __builtin_convertvector(top, Draws) * kTwoToMinus24 - 0.5f;
      std::memcpy(out + e0, &d, sizeof d);
    }
    return e0;
  }
};

}  // namespace

LPDT_CPU_CLONES void centered_uniforms(std::uint64_t stream, std::uint64_t index0, std::int64_t n,
                                       float* __restrict out) {
  LPDT_CHECK(n >= 0 && n <= kMaxDrawsAtOnce, "centered_uniforms: at most kMaxDrawsAtOnce draws");
  // The mixes of every pair the window touches, halves in element order (low half first, as
  // centered_uniform takes them), then the window's draws from its first element on.
  const std::uint64_t first_pair = index0 >> 1;
  const std::int64_t skip = static_cast<std::int64_t>(index0 & 1);
  const std::int64_t pairs = (skip + n + 1) / 2;
  const std::int64_t e0 =
      skip == 0 ? run_simd_kernel<WholePairDraws>(stream, first_pair, n, out) : 0;
  std::uint32_t halves[kMaxDrawsAtOnce + 2];
  for (std::int64_t p = (skip + e0) / 2; p < pairs; ++p) {
    const std::uint64_t h = pair_hash(stream, first_pair + static_cast<std::uint64_t>(p));
    halves[2 * p] = static_cast<std::uint32_t>(h);
    halves[2 * p + 1] = static_cast<std::uint32_t>(h >> 32);
  }
  for (std::int64_t e = e0; e < n; ++e) {
    out[e] = draw_of_half(halves[skip + e]);
  }
}

}  // namespace lpdt::quant
