#include "lpdt/exp/bench_stats.h"

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>

#include "lpdt/core/error.h"

namespace lpdt::exp {

double median(std::vector<double> values) {
  LPDT_CHECK(!values.empty(), "median of no values");
  std::sort(values.begin(), values.end());
  const std::size_t m = values.size() / 2;
  return values.size() % 2 ? values[m] : 0.5 * (values[m - 1] + values[m]);
}

Quartiles quartiles(std::vector<double> values) {
  LPDT_CHECK(!values.empty(), "quartiles of no values");
  std::sort(values.begin(), values.end());
  const auto at = [&](double fraction) {
    const double position = fraction * static_cast<double>(values.size() - 1);
    const auto below = static_cast<std::size_t>(position);
    const std::size_t above = std::min(below + 1, values.size() - 1);
    return values[below] + (position - static_cast<double>(below)) * (values[above] - values[below]);
  };
  return Quartiles{at(0.25), at(0.5), at(0.75)};
}

double heap_bytes_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<double>(info.uordblks) + static_cast<double>(info.hblkhd);
}

long minor_page_faults() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

double peak_resident_bytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;  // Linux reports KiB
}

}  // namespace lpdt::exp
