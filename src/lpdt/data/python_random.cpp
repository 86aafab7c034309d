#include "lpdt/data/python_random.h"

#include "lpdt/core/error.h"

namespace lpdt::data {
namespace {
constexpr std::uint32_t kMatrixA = 0x9908b0dfU;
constexpr std::uint32_t kUpperMask = 0x80000000U;
constexpr std::uint32_t kLowerMask = 0x7fffffffU;
}  // namespace

PythonRandom::PythonRandom(std::uint64_t seed) {
  std::vector<std::uint32_t> key;
  key.push_back(static_cast<std::uint32_t>(seed));
  if (seed >> 32) key.push_back(static_cast<std::uint32_t>(seed >> 32));
  init_by_array(key);
}

void PythonRandom::init_genrand(std::uint32_t s) {
  mt_[0] = s;
  for (int i = 1; i < kN; ++i) {
    mt_[i] = 1812433253U * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
  }
  index_ = kN;
}

// MT19937 init_by_array (2002/1/26 version), as CPython calls it with a fixed 19650218 base.
void PythonRandom::init_by_array(const std::vector<std::uint32_t>& key) {
  init_genrand(19650218U);
  const std::size_t length = key.size();
  std::size_t i = 1, j = 0;
  for (std::size_t k = (kN > length ? kN : length); k; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525U)) + key[j] +
             static_cast<std::uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
    if (j >= length) j = 0;
  }
  for (std::size_t k = kN - 1; k; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941U)) -
             static_cast<std::uint32_t>(i);
    ++i;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
  }
  mt_[0] = 0x80000000U;  // MSB set: a non-zero initial state
}

void PythonRandom::generate() {
  auto twist = [](std::uint32_t upper, std::uint32_t lower) {
    const std::uint32_t y = (upper & kUpperMask) | (lower & kLowerMask);
    return (y >> 1) ^ ((y & 1U) ? kMatrixA : 0U);
  };
  int kk = 0;
  for (; kk < kN - kM; ++kk) mt_[kk] = mt_[kk + kM] ^ twist(mt_[kk], mt_[kk + 1]);
  for (; kk < kN - 1; ++kk) mt_[kk] = mt_[kk + (kM - kN)] ^ twist(mt_[kk], mt_[kk + 1]);
  mt_[kN - 1] = mt_[kM - 1] ^ twist(mt_[kN - 1], mt_[0]);
  index_ = 0;
}

std::uint32_t PythonRandom::next_u32() {
  if (index_ >= kN) generate();
  std::uint32_t y = mt_[index_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= (y >> 18);
  return y;
}

std::uint64_t PythonRandom::getrandbits(int k) {
  LPDT_CHECK(k >= 1 && k <= 64, "PythonRandom::getrandbits: k must be in [1, 64]");
  // CPython fills 32-bit words least significant first; the last (or only) word keeps the top
  // bits of its draw.
  std::uint64_t result = 0;
  for (int shift = 0; k > 0; shift += 32, k -= 32) {
    std::uint32_t r = next_u32();
    if (k < 32) r >>= (32 - k);
    result |= static_cast<std::uint64_t>(r) << shift;
  }
  return result;
}

std::uint64_t PythonRandom::randbelow(std::uint64_t n) {
  LPDT_CHECK(n >= 1 && n <= (std::uint64_t{1} << 63), "PythonRandom::randbelow: n out of range");
  int k = 0;
  for (std::uint64_t m = n; m; m >>= 1) ++k;  // n.bit_length()
  std::uint64_t r = getrandbits(k);
  while (r >= n) r = getrandbits(k);
  return r;
}

}  // namespace lpdt::data
