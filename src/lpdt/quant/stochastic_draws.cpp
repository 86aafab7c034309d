#include "lpdt/quant/stochastic_draws.h"

#include <bit>
#include <cstring>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"
#include "lpdt/core/rng.h"

namespace lpdt::quant {

LPDT_CPU_CLONES void centered_uniforms(std::uint64_t stream, std::uint64_t index0, std::int64_t n,
                                       float* __restrict out) {
  LPDT_CHECK(n >= 0 && n <= kMaxDrawsAtOnce, "centered_uniforms: at most kMaxDrawsAtOnce draws");
  // The mixes of every pair the window touches, halves in element order (low half first, as
  // centered_uniform takes them), then the window's draws from its first element on.
  const std::uint64_t first_pair = index0 >> 1;
  const std::int64_t skip = static_cast<std::int64_t>(index0 & 1);
  const std::int64_t pairs = (skip + n + 1) / 2;
  std::int64_t e0 = 0;
  if (skip == 0) {
    // Eight mixes as one vector of 64-bit lanes, read as sixteen 32-bit halves in element order.
    using Mixes = std::uint64_t __attribute__((vector_size(64)));
    using Halves = std::uint32_t __attribute__((vector_size(64)));
    using Draws = float __attribute__((vector_size(64)));
    const Mixes lane = {0, 1, 2, 3, 4, 5, 6, 7};
    for (; e0 + 16 <= n; e0 += 16) {
      Mixes h = (first_pair + static_cast<std::uint64_t>(e0 / 2)) + lane;
      mix_pairs(stream, h);
      Halves halves;
      if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(&halves, &h, sizeof halves);
      } else {
        halves = __builtin_shufflevector(reinterpret_cast<Halves>(h), reinterpret_cast<Halves>(h),
                                         1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
      }
      const Draws d = __builtin_convertvector(halves >> 8, Draws) * kTwoToMinus24 - 0.5f;
      std::memcpy(out + e0, &d, sizeof d);
    }
  }
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
