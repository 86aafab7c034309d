#include "lpdt/data/numpy_argsort.h"

#include <numeric>
#include <utility>

namespace lpdt::data {
namespace {

// numpy: partitions are sorted by insertion sort once pr - pl <= SMALL_QUICKSORT (15), and the
// explicit stack holds 2 pointers per level, PYA_QS_STACK = 2 * bits(npy_intp) = 128 entries.
constexpr int64_t kSmallQuicksort = 15;
constexpr int kStackSize = 128;

// npy_get_msb: index of the highest set bit (floor(log2 n)), 0 for n <= 1.
int msb(std::uint64_t n) {
  int depth = 0;
  while (n >>= 1) ++depth;
  return depth;
}

}  // namespace

namespace {

// Sifts `moving` down from position i of the heap a[1..n] (values v[a[.]], the larger child
// first, equal values not moved past), and places it where it stops.
void sift_down(const int64_t* v, int64_t* a, int64_t i, int64_t n, int64_t moving) {
  for (int64_t j = i << 1; j <= n;) {
    if (j < n && v[a[j]] < v[a[j + 1]]) j += 1;
    if (!(v[moving] < v[a[j]])) break;
    a[i] = a[j];
    i = j;
    j += j;
  }
  a[i] = moving;
}

}  // namespace

// Heapsort on 1-based positions (numpy offsets the array by one so that the children of i are
// 2i and 2i + 1): first heapify from n/2 down, then repeatedly move the root to the end.
void numpy_aheapsort(const int64_t* v, int64_t* order, int64_t n) {
  int64_t* a = order - 1;  // a[1..n]
  for (int64_t l = n >> 1; l > 0; --l) sift_down(v, a, l, n, a[l]);
  for (; n > 1;) {
    const int64_t moving = a[n];
    a[n] = a[1];
    n -= 1;
    sift_down(v, a, 1, n, moving);
  }
}

// Introsort on index pointers: median-of-3 pivot moved to pr - 1, Hoare-style partition that
// stops on keys equal to the pivot, the larger side pushed on the stack (with the depth budget
// at that point) while the loop continues on the smaller side, insertion sort for short ranges,
// and a heapsort fallback for a range popped (or started) with an exhausted depth budget.
void numpy_aquicksort(const int64_t* v, int64_t* order, int64_t n) {
  if (n <= 1) return;
  int64_t* pl = order;
  int64_t* pr = order + n - 1;
  int64_t* stack[kStackSize];
  int64_t** sptr = stack;
  int depth[kStackSize];
  int* psdepth = depth;
  int cdepth = msb(static_cast<std::uint64_t>(n)) * 2;

  for (;;) {
    if (cdepth < 0) {
      numpy_aheapsort(v, pl, pr - pl + 1);
    } else {
      while ((pr - pl) > kSmallQuicksort) {
        int64_t* pm = pl + ((pr - pl) >> 1);
        if (v[*pm] < v[*pl]) std::swap(*pm, *pl);
        if (v[*pr] < v[*pm]) std::swap(*pr, *pm);
        if (v[*pm] < v[*pl]) std::swap(*pm, *pl);
        const int64_t vp = v[*pm];
        int64_t* pi = pl;
        int64_t* pj = pr - 1;
        std::swap(*pm, *pj);
        for (;;) {
          do {
            ++pi;
          } while (v[*pi] < vp);
          do {
            --pj;
          } while (vp < v[*pj]);
          if (pi >= pj) break;
          std::swap(*pi, *pj);
        }
        std::swap(*pi, *(pr - 1));
        if (pi - pl < pr - pi) {
          *sptr++ = pi + 1;
          *sptr++ = pr;
          pr = pi - 1;
        } else {
          *sptr++ = pl;
          *sptr++ = pi - 1;
          pl = pi + 1;
        }
        *psdepth++ = --cdepth;
      }
      // Insertion sort of [pl, pr].
      for (int64_t* pi = pl + 1; pi <= pr; ++pi) {
        const int64_t vi = *pi;
        const int64_t vp = v[vi];
        int64_t* pj = pi;
        int64_t* pk = pi - 1;
        while (pj > pl && vp < v[*pk]) *pj-- = *pk--;
        *pj = vi;
      }
    }
    if (sptr == stack) break;
    pr = *(--sptr);
    pl = *(--sptr);
    cdepth = *(--psdepth);
  }
}

std::vector<int64_t> numpy_argsort(const std::vector<int64_t>& values) {
  std::vector<int64_t> order(values.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  numpy_aquicksort(values.data(), order.data(), static_cast<int64_t>(values.size()));
  return order;
}

}  // namespace lpdt::data
