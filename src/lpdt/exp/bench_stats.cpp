#include "lpdt/exp/bench_stats.h"

#include <algorithm>

#include "lpdt/core/error.h"

namespace lpdt::exp {

double median(std::vector<double> values) {
  LPDT_CHECK(!values.empty(), "median of no values");
  std::sort(values.begin(), values.end());
  const std::size_t m = values.size() / 2;
  return values.size() % 2 ? values[m] : 0.5 * (values[m - 1] + values[m]);
}

}  // namespace lpdt::exp
