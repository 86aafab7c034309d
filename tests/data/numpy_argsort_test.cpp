// The numpy 1.24 argsort port: valid argsort on random inputs, and numpy's exact permutation on
// the ground-truth cases of reference_values.h (generated with numpy 1.24.2 itself).
#include "lpdt/data/numpy_argsort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "lpdt/core/rng.h"
#include "reference_values.h"
#include "test_util.h"

namespace lpdt::data {
namespace {

// A plain reference: is `order` a permutation of 0..n-1 that puts `values` in order?
void expect_valid_argsort(const std::vector<int64_t>& values, const std::vector<int64_t>& order) {
  ASSERT_EQ(order.size(), values.size());
  std::vector<int64_t> sorted_order = order;
  std::sort(sorted_order.begin(), sorted_order.end());
  for (std::size_t i = 0; i < sorted_order.size(); ++i) {
    ASSERT_EQ(sorted_order[i], static_cast<int64_t>(i)) << "not a permutation";
  }
  for (std::size_t i = 1; i < order.size(); ++i) {
    ASSERT_LE(values[order[i - 1]], values[order[i]]) << "keys out of order at " << i;
  }
}

TEST(NumpyArgsort, ValidOnRandomArrays) {
  Rng rng = Rng::stream(11, 0, StreamPurpose::kTest);
  for (int64_t n : {0, 1, 2, 15, 16, 17, 100, 1000, 4096, 10007}) {
    for (std::uint64_t range : {1ULL, 2ULL, 10ULL, 1000ULL, 1ULL << 40}) {
      std::vector<int64_t> values(static_cast<std::size_t>(n));
      for (auto& v : values) v = static_cast<int64_t>(rng.below(range)) - 5;
      expect_valid_argsort(values, numpy_argsort(values));
    }
  }
}

TEST(NumpyArgsort, ValidOnSortedAndReversedInputs) {
  std::vector<int64_t> up(3000), down(3000), organ(3000);
  for (int64_t i = 0; i < 3000; ++i) {
    up[i] = i;
    down[i] = 3000 - i;
    organ[i] = i < 1500 ? i : 3000 - i;
  }
  for (const auto& v : {up, down, organ}) expect_valid_argsort(v, numpy_argsort(v));
  EXPECT_EQ(numpy_argsort(up), up);  // already sorted distinct keys stay in place
}

TEST(NumpyArgsort, NotStableOnDuplicates) {
  // The reference's within-class order differs from a stable sort (lpdl-reference-spec.md 8.3).
  const auto values = testing::lcg_values(3, 100, 10);
  std::vector<int64_t> stable(values.size());
  std::iota(stable.begin(), stable.end(), 0);
  std::stable_sort(stable.begin(), stable.end(),
                   [&](int64_t a, int64_t b) { return values[a] < values[b]; });
  EXPECT_NE(numpy_argsort(values), stable);
}

TEST(NumpyArgsort, MatchesNumpyExactly) {
  for (const auto& c : testref::kArgsortCases) {
    const auto values = testing::lcg_values(c.seed, c.n, c.range);
    const auto order = numpy_argsort(values);
    expect_valid_argsort(values, order);
    EXPECT_EQ(testing::fnv1a(order), c.fnv1a)
        << "seed " << c.seed << " n " << c.n << " range " << c.range;
  }
}

TEST(NumpyArgsort, HeapsortFallbackMatchesNumpy) {
  // McIlroy's adversary drives the introsort past its 2*msb(n) depth budget.
  EXPECT_EQ(numpy_argsort(testref::kHeapsortFallbackInput), testref::kHeapsortFallbackArgsort);
}

TEST(NumpyArgsort, HeapsortAloneIsAValidArgsort) {
  Rng rng = Rng::stream(12, 0, StreamPurpose::kTest);
  for (int64_t n : {1, 2, 3, 16, 17, 1000}) {
    std::vector<int64_t> values(static_cast<std::size_t>(n));
    for (auto& v : values) v = static_cast<int64_t>(rng.below(7));
    std::vector<int64_t> order(values.size());
    std::iota(order.begin(), order.end(), 0);
    numpy_aheapsort(values.data(), order.data(), n);
    expect_valid_argsort(values, order);
  }
}

}  // namespace
}  // namespace lpdt::data
