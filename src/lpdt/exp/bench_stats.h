#pragma once
// Small helpers the benchmarks share.
#include <vector>

namespace lpdt::exp {

// The median of timed repetitions (what every benchmark reports; docs/benchmarks.md).
double median(std::vector<double> values);

}  // namespace lpdt::exp
