// The statistics every benchmark reports (exp/bench_stats.h), against values worked by hand.
#include "lpdt/exp/bench_stats.h"

#include <gtest/gtest.h>

#include <vector>

namespace lpdt::exp {
namespace {

TEST(BenchStats, MedianOfOddAndEvenSamples) {
  EXPECT_DOUBLE_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_DOUBLE_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
}

// Linear interpolation between the sorted values at positions 0.25 (n - 1), 0.5 (n - 1) and
// 0.75 (n - 1), as numpy.quantile does by default.
TEST(BenchStats, QuartilesInterpolateBetweenSortedValues) {
  const Quartiles four = quartiles({4.0, 1.0, 3.0, 2.0});  // positions 0.75, 1.5, 2.25
  EXPECT_DOUBLE_EQ(four.low, 1.75);
  EXPECT_DOUBLE_EQ(four.median, 2.5);
  EXPECT_DOUBLE_EQ(four.high, 3.25);
  const Quartiles five = quartiles({10.0, 0.0, 40.0, 20.0, 30.0});  // positions 1, 2, 3
  EXPECT_DOUBLE_EQ(five.low, 10.0);
  EXPECT_DOUBLE_EQ(five.median, 20.0);
  EXPECT_DOUBLE_EQ(five.high, 30.0);
  const Quartiles one = quartiles({7.0});
  EXPECT_DOUBLE_EQ(one.low, 7.0);
  EXPECT_DOUBLE_EQ(one.high, 7.0);
  // The median agrees with median() on random-looking samples of both parities.
  std::vector<double> values;
  for (int i = 0; i < 9; ++i) {
    values.push_back((i * 37 % 11) * 0.5);
    EXPECT_DOUBLE_EQ(quartiles(values).median, median(values)) << i;
  }
}

TEST(BenchStats, NoValuesIsAnError) {
  EXPECT_ANY_THROW(quartiles({}));
  EXPECT_ANY_THROW(median({}));
}

}  // namespace
}  // namespace lpdt::exp
