// CPython's random.Random against values printed by CPython 3.11 itself (reference_values.h).
#include "lpdt/data/python_random.h"

#include <gtest/gtest.h>

#include <numeric>

#include "reference_values.h"

namespace lpdt::data {
namespace {

TEST(PythonRandom, Mt19937WordsMatchCPython) {
  for (const auto& c : testref::kMtWords) {
    PythonRandom r(c.seed);
    std::vector<std::uint32_t> words;
    for (int i = 0; i < 5; ++i) words.push_back(static_cast<std::uint32_t>(r.getrandbits(32)));
    for (int i = 0; i < 700; ++i) r.next_u32();
    words.push_back(static_cast<std::uint32_t>(r.getrandbits(32)));
    EXPECT_EQ(words, c.words) << "seed " << c.seed;
  }
}

TEST(PythonRandom, ShuffleMatchesCPython) {
  for (const auto& c : testref::kShuffles) {
    std::vector<int64_t> x(c.shuffled.size());
    std::iota(x.begin(), x.end(), 0);
    PythonRandom(c.seed).shuffle(x);
    EXPECT_EQ(x, c.shuffled) << "seed " << c.seed;
  }
}

TEST(PythonRandom, WideGetrandbitsMatchesCPython) {
  PythonRandom r(5);
  EXPECT_EQ(r.getrandbits(40), testref::kWideBits[0]);
  EXPECT_EQ(r.getrandbits(64), testref::kWideBits[1]);
  EXPECT_EQ(r.getrandbits(33), testref::kWideBits[2]);
}

TEST(PythonRandom, RandbelowStaysInRange) {
  PythonRandom r(42);
  for (std::uint64_t n : {1ULL, 2ULL, 3ULL, 5ULL, 1000ULL, (1ULL << 32) - 1, 1ULL << 32}) {
    for (int i = 0; i < 200; ++i) EXPECT_LT(r.randbelow(n), n);
  }
}

}  // namespace
}  // namespace lpdt::data
