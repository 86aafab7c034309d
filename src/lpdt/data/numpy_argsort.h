#pragma once
// A port of numpy 1.24's default argsort for int64 (`np.argsort(a)`, kind="quicksort":
// `aquicksort_` / `aheapsort_` in numpy/core/src/npysort/{quicksort,heapsort}.cpp), so that the
// reference skew partition (lpdl-reference-spec.md 8.2-8.3) can be reproduced bit for bit.
// The sort is an introsort and NOT stable: equal keys come out in a deterministic but
// non-trivial order, which is exactly what has to be matched. Reimplemented (not copied) and
// checked against numpy 1.24.2's own outputs (tests/data/reference_values.h).
#include <cstdint>
#include <vector>

namespace lpdt::data {

// np.argsort(values) with numpy 1.24 on int64: the permutation that sorts `values`.
std::vector<int64_t> numpy_argsort(const std::vector<int64_t>& values);

// The in-place kernels, on a permutation `order` of n entries that index into `values`
// (numpy starts from 0..n-1). Exposed so that the heapsort fallback can be tested on its own.
void numpy_aquicksort(const int64_t* values, int64_t* order, int64_t n);
void numpy_aheapsort(const int64_t* values, int64_t* order, int64_t n);

}  // namespace lpdt::data
