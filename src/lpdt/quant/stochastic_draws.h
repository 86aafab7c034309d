#pragma once
// Random draws for stochastic rounding, counter-based: the draw for element e of node n's tensor
// at quantization site s in training step t is a hash of (seed, n, t, s, e). So a draw does not
// depend on how nodes are grouped into passes, on the thread count, on the backend (simulated or
// integer) or on the process layout (simulator or MPI), and costs a few integer operations that
// vectorise (a sequential generator per node would cost ~1 ns per element, more than the
// quantization itself).
#include <cstdint>

#include "lpdt/core/host_device.h"
#include "lpdt/core/rng.h"

namespace lpdt::quant {

// Which draw of a step: one per quantization site (forward activations, backward gradients).
// Sites are numbered when a model is built (nn::Registry::add_quant_site).
using SiteId = std::uint32_t;

// Identifies the draws of one forward/backward: a model's step, for nodes first_node ... of the
// run (global node ids, so that a rank of an MPI run draws what the simulator draws).
struct DrawKey {
  std::uint64_t seed = 0;
  std::int64_t step = 0;
  std::int64_t first_node = 0;
  // Where set, the CUDA quantizer kernels read the step from this int64 in device memory instead
  // of `step`: a step replayed as a CUDA graph (whose kernel arguments are frozen at capture) then
  // draws for the step the counter holds, which the graph advances (exp/trainer.cpp). The same
  // value as `step` on every step, so the same draws. CPU and tensor-operation paths refuse it.
  const std::int64_t* device_step = nullptr;
};

// The 64-bit key of one (seed, node, step, site): SplitMix64 finalisers chained. Distinct
// constants keep (node, step, site) triples apart before each mix. Inline, host and device: the
// CUDA quantizer derives each node's stream in its kernels.
LPDT_HOST_DEVICE inline std::uint64_t draw_stream(const DrawKey& key, std::int64_t local_node,
                                                  SiteId site) {
  std::uint64_t h = mix64(key.seed ^ 0x51A7E5C0FFEEull);
  h = mix64(h ^ static_cast<std::uint64_t>(key.first_node + local_node));
  h = mix64(h ^ (static_cast<std::uint64_t>(key.step) * 0xA24BAED4963EE407ull));
  h = mix64(h ^ (static_cast<std::uint64_t>(site) * 0x9FB21C651E98DF25ull));
  return h;
}

// The multiplier a pair index p enters the mix with, p * kPairMultiplier (mod 2^64): consecutive
// pairs' products differ by it, so a loop over pairs can add instead of multiply.
constexpr std::uint64_t kPairMultiplier = 0x9E3779B97F4A7C15ull;

// mix_pairs from the product h = p * kPairMultiplier on (the vector draws build it by adding).
template <typename U>
LPDT_HOST_DEVICE inline void mix_scaled_pairs(std::uint64_t stream, U& h) {
  h = stream ^ h;
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
}

// Replaces pair index p by the 64-bit mix (two multiply-xorshift rounds) of the stream key and p:
// one pair (U = std::uint64_t), or lane by lane a GCC vector of pairs (in place, as a vector
// argument or result would tie the helper to an ABI).
template <typename U>
LPDT_HOST_DEVICE inline void mix_pairs(std::uint64_t stream, U& h) {
  h *= kPairMultiplier;
  mix_scaled_pairs(stream, h);
}
LPDT_HOST_DEVICE inline std::uint64_t pair_hash(std::uint64_t stream, std::uint64_t pair) {
  mix_pairs(stream, pair);
  return pair;
}

// Uniform in [-0.5, 0.5) with 24 random bits. Elements 2p and 2p + 1 share one mix of pair p: the
// even element takes the top 24 bits of its low 32-bit half, the odd one those of its high half.
// One mix per two draws halves the cost of stochastic rounding (docs/benchmarks.md, low precision
// item 23); the halves of a mix are independent enough for the tests of
// StochasticRounding.DrawsAreUniformAndUncorrelated.
constexpr float kTwoToMinus24 = 1.0f / 16777216.0f;
// The draw of one 32-bit half of a mix.
LPDT_HOST_DEVICE inline float draw_of_half(std::uint32_t half) {
  return static_cast<float>(half >> 8) * kTwoToMinus24 - 0.5f;
}
LPDT_HOST_DEVICE inline float centered_uniform(std::uint64_t stream, std::uint64_t index) {
  const std::uint64_t h = pair_hash(stream, index >> 1);
  return draw_of_half(static_cast<std::uint32_t>((index & 1) != 0 ? h >> 32 : h));
}

// centered_uniform(stream, index0 + e) for e in [0, n), n <= kMaxDrawsAtOnce, into out: one mix
// per pair, vectorised (the quantizers' loops take their draws from here).
constexpr std::int64_t kMaxDrawsAtOnce = 256;
void centered_uniforms(std::uint64_t stream, std::uint64_t index0, std::int64_t n, float* out);

}  // namespace lpdt::quant
