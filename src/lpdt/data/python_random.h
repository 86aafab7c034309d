#pragma once
// CPython's `random.Random` as far as the reference partitioner uses it: seeding from a
// non-negative int, getrandbits(k <= 64), _randbelow and shuffle (CPython 3.11,
// Modules/_randommodule.c and Lib/random.py). MT19937 is Matsumoto & Nishimura 1998.
// Needed only to reproduce the official skew partition bit for bit
// (lpdl-reference-spec.md 8.3); lpdt's own randomness uses lpdt::Rng.
#include <array>
#include <cstdint>
#include <vector>

namespace lpdt::data {

class PythonRandom {
 public:
  // random.Random(seed) for an int seed: CPython keys init_by_array with the 32-bit words of
  // abs(seed), least significant first ([0] for seed 0).
  explicit PythonRandom(std::uint64_t seed);

  // MT19937 genrand_uint32 (the tempered output word).
  std::uint32_t next_u32();
  // random.getrandbits(k) for 1 <= k <= 64 (k <= 32: the top k bits of one output word).
  std::uint64_t getrandbits(int k);
  // Random._randbelow_with_getrandbits(n), n >= 1: k = n.bit_length(); draw getrandbits(k)
  // until it is < n.
  std::uint64_t randbelow(std::uint64_t n);

  // random.shuffle(x): for i = len-1 down to 1: j = randbelow(i + 1); swap(x[i], x[j]).
  template <typename T>
  void shuffle(std::vector<T>& x) {
    for (std::size_t i = x.size(); i-- > 1;) {
      const std::size_t j = static_cast<std::size_t>(randbelow(i + 1));
      std::swap(x[i], x[j]);
    }
  }

 private:
  static constexpr int kN = 624;
  static constexpr int kM = 397;
  void init_genrand(std::uint32_t s);
  void init_by_array(const std::vector<std::uint32_t>& key);
  void generate();

  std::array<std::uint32_t, kN> mt_{};
  int index_ = kN;
};

}  // namespace lpdt::data
