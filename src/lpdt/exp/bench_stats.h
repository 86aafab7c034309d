#pragma once
// Small helpers the benchmarks share.
#include <vector>

namespace lpdt::exp {

// The median of timed repetitions (what every benchmark reports; docs/benchmarks.md).
double median(std::vector<double> values);

// The quartiles of a sample: the values at fractions 1/4, 1/2 and 3/4 of the sorted sample,
// interpolated linearly between neighbours (numpy's default `quantile`), so that `median` is
// `median()`'s.
struct Quartiles {
  double low = 0;     // first quartile
  double median = 0;  // second
  double high = 0;    // third
};
Quartiles quartiles(std::vector<double> values);

// Bytes malloc has handed out and not taken back (main arena plus mmapped blocks): LibTorch's CPU
// tensors are plain malloc allocations, made by the thread that runs the operator.
double heap_bytes_in_use();

// This process's minor page faults so far, and its peak resident set in bytes (getrusage).
long minor_page_faults();
double peak_resident_bytes();

}  // namespace lpdt::exp
