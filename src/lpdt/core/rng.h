#pragma once
// Deterministic random streams. Every stream is derived from (root seed, node, purpose) so that
// runs are bit-identical across standard libraries, processes and MPI layouts
// (docs/reproducibility.md). We use our own distributions: std::uniform_real_distribution and
// friends differ between standard libraries.
#include <cstdint>
#include <string_view>

#include "lpdt/core/host_device.h"

namespace lpdt {

// What a stream is used for; part of the stream's identity.
enum class StreamPurpose : std::uint64_t {
  kInit = 1,
  kDataOrder = 2,
  kAugment = 3,
  kPartition = 4,
  kCompress = 5,
  kGraph = 6,
  kSynthetic = 7,
  kTest = 99,
};

// SplitMix64 finaliser: a strong 64-bit mixing function (Steele et al. 2014). Inline for the CUDA
// kernels that derive stochastic-rounding streams on the device (quant/stochastic_draws.h).
LPDT_HOST_DEVICE inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// xoshiro256** (Blackman & Vigna 2018), seeded through SplitMix64.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  // The stream for (seed, node, purpose): independent of every other triple.
  static Rng stream(std::uint64_t seed, std::uint64_t node, StreamPurpose purpose);

  std::uint64_t next_u64();
  // Uniform in [0, 1) with 53 random bits.
  double uniform();
  // Uniform integer in [0, n), unbiased (rejection sampling). n > 0.
  std::uint64_t below(std::uint64_t n);
  // Standard normal (Box-Muller; no cached second value, so the stream position is simple).
  double normal();
  // Gamma(shape, 1) (Marsaglia & Tsang 2000), for Dirichlet sampling.
  double gamma(double shape);

 private:
  std::uint64_t s_[4];
};

// Fisher-Yates shuffle of [first, last) with the given stream.
template <typename It>
void shuffle(It first, It last, Rng& rng) {
  const auto n = static_cast<std::uint64_t>(last - first);
  for (std::uint64_t i = n; i > 1; --i) {
    const std::uint64_t j = rng.below(i);
    std::swap(first[i - 1], first[j]);
  }
}

}  // namespace lpdt
