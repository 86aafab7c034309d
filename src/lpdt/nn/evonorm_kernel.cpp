#include "lpdt/nn/evonorm_kernel.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"
#include "lpdt/nn/node_layout.h"

// ISA: the per-sample functions below are LPDT_CPU_CLONES (core/cpu_dispatch.h): compiled for
// AVX-512, AVX2+FMA and baseline x86-64 and picked for the CPU when the program starts, so the
// binary needs no -march=native. Their inner loops run over the contiguous dimension with no
// calls (the sigmoid's exp is our own inlined polynomial, fast_exp) and restrict pointers, so GCC
// vectorises them at -O3 without -ffast-math. Channels-last samples whose channel count fills
// whole registers take explicit-vector versions of the same loops instead (run_simd_kernel,
// "channels-last in explicit vectors" below).

namespace lpdt::nn {
namespace {

// ---- exp and sigmoid -------------------------------------------------------------------------
//
// exp(z) = 2^n * exp(r), n = round(z / ln 2), r = z - n ln 2 in [-ln2/2, ln2/2] (ln 2 split in a
// high part with few mantissa bits and a low part, so n * ln2_hi is exact: Cody and Waite), and
// exp(r) ~ 1 + r + r^2 P(r) with Cephes' degree-5 minimax P (cephes/single/expf.c; relative
// error about 1e-7 over the range, checked in evonorm_kernel_test.cpp). The rounding uses the
// 1.5 * 2^23 trick, whose low mantissa bits then hold n as an integer: 2^n is built directly in
// the exponent field. Everything is float arithmetic and bit casts, so a loop calling it
// vectorises on any SSE/AVX level.
constexpr float kExpMin = -87.3365f;  // ln(2^-126): n >= -126 keeps 2^n a normal float
constexpr float kExpMax = 88.0f;      // n <= 127 and exp(88) < FLT_MAX
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23
constexpr std::int32_t kRoundMagicBits = 0x4B400000;
constexpr float kExpP0 = 1.9875691500e-4f;
constexpr float kExpP1 = 1.3981999507e-3f;
constexpr float kExpP2 = 8.3334519073e-3f;
constexpr float kExpP3 = 4.1665795894e-2f;
constexpr float kExpP4 = 1.6666665459e-1f;
constexpr float kExpP5 = 5.0000001201e-1f;

[[gnu::always_inline]] inline float fast_exp(float z) {
  z = z < kExpMin ? kExpMin : z;
  z = z > kExpMax ? kExpMax : z;
  const float t = z * kLog2e + kRoundMagic;
  const float n = t - kRoundMagic;
  const std::int32_t ni = std::bit_cast<std::int32_t>(t) - kRoundMagicBits;
  float r = z - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = kExpP0;
  p = p * r + kExpP1;
  p = p * r + kExpP2;
  p = p * r + kExpP3;
  p = p * r + kExpP4;
  p = p * r + kExpP5;
  const float exp_r = p * (r * r) + r + 1.0f;
  return exp_r * std::bit_cast<float>((ni + 127) << 23);
}

// sigmoid(z) = 1 / (1 + exp(-z)); exp's clamping gives exactly 1 for z > 87.3 and ~6e-39 for
// z < -88.
[[gnu::always_inline]] inline float fast_sigmoid(float z) { return 1.0f / (1.0f + fast_exp(-z)); }

// ---- reductions over one contiguous row (NCHW order) ------------------------------------------
//
// Sums in double over a row of floats. Independent lanes make the loop vectorisable without
// -ffast-math (a single accumulator would be a serial dependency GCC may not reorder), and the
// order of additions is fixed, so the result is deterministic.
constexpr std::int64_t kLanes = 8;

[[gnu::always_inline]] inline double row_sum(const float* __restrict a, std::int64_t n) {
  double lanes[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::int64_t j = 0; j < kLanes; ++j) lanes[j] += static_cast<double>(a[i + j]);
  }
  double total = 0.0;
  for (; i < n; ++i) total += static_cast<double>(a[i]);
  for (std::int64_t j = 0; j < kLanes; ++j) total += lanes[j];
  return total;
}

// sum (a - shift) and sum (a - shift)^2 over a row, in double.
[[gnu::always_inline]] inline void row_shifted_moments(const float* __restrict a, std::int64_t n,
                                                       double shift, double* sum, double* sum_sq) {
  double lanes[kLanes] = {}, lanes_sq[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::int64_t j = 0; j < kLanes; ++j) {
      const double d = static_cast<double>(a[i + j]) - shift;
      lanes[j] += d;
      lanes_sq[j] += d * d;
    }
  }
  double s = 0.0, q = 0.0;
  for (; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - shift;
    s += d;
    q += d * d;
  }
  for (std::int64_t j = 0; j < kLanes; ++j) {
    s += lanes[j];
    q += lanes_sq[j];
  }
  *sum += s;
  *sum_sq += q;
}

// ---- per-sample work, shared by both loop orders ----------------------------------------------

// Channels-last sums run in float over this many pixels, then go into double sums: float
// vectors are twice as wide as double ones and need no conversion, and a float sum of 16 terms
// loses at most about 16 ulps before it is widened.
constexpr std::int64_t kBlockPixels = 16;

struct Shape {
  std::int64_t hw = 0;  // H * W
  std::int64_t kc = 0;  // channels K*C
  std::int64_t cg = 0;  // channels per group
};

// Per-sample scratch, allocated once per parallel chunk.
struct Scratch {
  explicit Scratch(const Shape& s)
      : acc0(s.kc),
        acc1(s.kc),
        acc2(s.kc),
        coef0(s.kc),
        coef1(s.kc),
        coef2(s.kc),
        block0(s.kc),
        block1(s.kc),
        block2(s.kc),
        row0(s.hw),
        row1(s.hw) {}
  std::vector<double> acc0, acc1, acc2;       // per-channel sums over the sample's pixels
  std::vector<float> coef0, coef1, coef2;     // per-channel coefficients of the second pass
  std::vector<float> block0, block1, block2;  // per-channel sums over one block of pixels
  std::vector<float> row0, row1;              // one channel's pixels (NCHW order)
};

// The shift each channel's statistics are accumulated around: the group's first value. The
// variance is shift-invariant, and E[d^2] - E[d]^2 over d = x - shift does not cancel
// catastrophically when |mean| >> std as it would over x itself.
inline double group_shift(const float* x_sample, std::int64_t c, const Shape& s,
                          bool channels_last) {
  const std::int64_t first = (c / s.cg) * s.cg;
  return static_cast<double>(channels_last ? x_sample[first] : x_sample[first * s.hw]);
}

// From per-channel shifted sums (acc0 = sum d, acc1 = sum d^2) to the sample's mean[g] and r[g]
// and the per-channel output scale r[g] * gamma[c] (coef0).
inline void finish_statistics(const float* x_sample, const Shape& s, bool channels_last,
                              const float* gamma, double eps, Scratch& w, float* mean,
                              float* rstd) {
  const double count = static_cast<double>(s.hw * s.cg);
  for (std::int64_t g = 0; g < s.kc / s.cg; ++g) {
    double sum = 0.0, sum_sq = 0.0;
    for (std::int64_t c = g * s.cg; c < (g + 1) * s.cg; ++c) {
      sum += w.acc0[c];
      sum_sq += w.acc1[c];
    }
    const double shifted_mean = sum / count;
    const double var = std::max(sum_sq / count - shifted_mean * shifted_mean, 0.0);
    const double r = 1.0 / std::sqrt(var + eps);
    mean[g] = static_cast<float>(group_shift(x_sample, g * s.cg, s, channels_last) + shifted_mean);
    rstd[g] = static_cast<float>(r);
    for (std::int64_t c = g * s.cg; c < (g + 1) * s.cg; ++c) {
      w.coef0[c] = static_cast<float>(r * gamma[c]);
    }
  }
}

// From per-channel sums over the sample's pixels (acc0 = sum dy, acc1 = sum dy num,
// acc2 = sum dy x^2 s (1 - s)) to the sample's parameter gradients grads[0..3][c]
// (dv, dgamma, dbeta) and the dx coefficients: coef0 = gamma r, coef1 = 2 dvar / N_g,
// coef2 = mean.
inline void finish_gradients(const Shape& s, const float* gamma, const float* mean,
                             const float* rstd, Scratch& w, double* grads) {
  const double count = static_cast<double>(s.hw * s.cg);
  double* dv = grads;
  double* dgamma = grads + s.kc;
  double* dbeta = grads + 2 * s.kc;
  for (std::int64_t g = 0; g < s.kc / s.cg; ++g) {
    const double r = rstd[g];
    double dr = 0.0;
    for (std::int64_t c = g * s.cg; c < (g + 1) * s.cg; ++c) dr += gamma[c] * w.acc1[c];
    const double dvar = -0.5 * dr * r * r * r;
    for (std::int64_t c = g * s.cg; c < (g + 1) * s.cg; ++c) {
      dv[c] = gamma[c] * r * w.acc2[c];
      dgamma[c] = r * w.acc1[c];
      dbeta[c] = w.acc0[c];
      w.coef0[c] = static_cast<float>(gamma[c] * r);
      w.coef1[c] = static_cast<float>(2.0 * dvar / count);
      w.coef2[c] = mean[g];
    }
  }
}

// Before a channels-last sample's moments: each channel's shift (its group's first value, in
// coef1) and its sums (acc0, acc1) at zero.
inline void start_channels_last_moments(const float* x, const Shape& s, Scratch& w) {
  for (std::int64_t c = 0; c < s.kc; ++c) {
    w.coef1[c] = x[(c / s.cg) * s.cg];
    w.acc0[c] = 0.0;
    w.acc1[c] = 0.0;
  }
}

// Before a sample's backward sums: acc0, acc1 and acc2 at zero.
inline void clear_sums(Scratch& w) {
  std::fill(w.acc0.begin(), w.acc0.end(), 0.0);
  std::fill(w.acc1.begin(), w.acc1.end(), 0.0);
  std::fill(w.acc2.begin(), w.acc2.end(), 0.0);
}

// ---- channels-last: one sample is [H*W, K*C], rows of K*C contiguous channels -----------------

LPDT_CPU_CLONES void forward_sample_channels_last(const float* __restrict x, float* __restrict y,
                                                  Shape s, const float* __restrict v,
                                                  const float* __restrict gamma,
                                                  const float* __restrict beta, double eps,
                                                  float* mean, float* rstd, Scratch& w) {
  const std::int64_t kc = s.kc;
  start_channels_last_moments(x, s, w);
  double* __restrict sum = w.acc0.data();
  double* __restrict sum_sq = w.acc1.data();
  const float* __restrict shift = w.coef1.data();
  // Pass 1: per-channel shifted moments, in float over blocks of kBlockPixels pixels (full-width
  // vectors and no conversions in the inner loop) and in double across blocks.
  float* __restrict block_sum = w.block0.data();
  float* __restrict block_sq = w.block1.data();
  for (std::int64_t p0 = 0; p0 < s.hw; p0 += kBlockPixels) {
    const std::int64_t p1 = std::min(s.hw, p0 + kBlockPixels);
    for (std::int64_t c = 0; c < kc; ++c) block_sum[c] = block_sq[c] = 0.0f;
    for (std::int64_t p = p0; p < p1; ++p) {
      const float* __restrict row = x + p * kc;
      for (std::int64_t c = 0; c < kc; ++c) {
        const float d = row[c] - shift[c];
        block_sum[c] += d;
        block_sq[c] += d * d;
      }
    }
    for (std::int64_t c = 0; c < kc; ++c) {
      sum[c] += static_cast<double>(block_sum[c]);
      sum_sq[c] += static_cast<double>(block_sq[c]);
    }
  }
  finish_statistics(x, s, /*channels_last=*/true, gamma, eps, w, mean, rstd);
  // Pass 2: y = x sigmoid(v x) (r gamma) + beta.
  const float* __restrict scale = w.coef0.data();
  for (std::int64_t p = 0; p < s.hw; ++p) {
    const float* __restrict row = x + p * kc;
    float* __restrict out = y + p * kc;
    for (std::int64_t c = 0; c < kc; ++c) {
      const float xv = row[c];
      out[c] = xv * fast_sigmoid(v[c] * xv) * scale[c] + beta[c];
    }
  }
}

LPDT_CPU_CLONES void backward_sample_channels_last(const float* __restrict dy,
                                                   const float* __restrict x, float* __restrict dx,
                                                   Shape s, const float* __restrict v,
                                                   const float* __restrict gamma, const float* mean,
                                                   const float* rstd, double* grads, Scratch& w) {
  const std::int64_t kc = s.kc;
  double* __restrict sum_dy = w.acc0.data();
  double* __restrict sum_dy_num = w.acc1.data();
  double* __restrict sum_dy_dnum_dv = w.acc2.data();
  clear_sums(w);
  // Pass 1: the per-channel sums; sigmoid(v x) is stored in dx for pass 2 (the sample is still
  // in cache there, and the exp is the most expensive part of the pass).
  // The sums in float over blocks of kBlockPixels pixels, in double across blocks (as forward).
  float* __restrict block_dy = w.block0.data();
  float* __restrict block_num = w.block1.data();
  float* __restrict block_dnum = w.block2.data();
  for (std::int64_t p0 = 0; p0 < s.hw; p0 += kBlockPixels) {
    const std::int64_t p1 = std::min(s.hw, p0 + kBlockPixels);
    for (std::int64_t c = 0; c < kc; ++c) block_dy[c] = block_num[c] = block_dnum[c] = 0.0f;
    for (std::int64_t p = p0; p < p1; ++p) {
      const float* __restrict xr = x + p * kc;
      const float* __restrict dyr = dy + p * kc;
      float* __restrict sr = dx + p * kc;
      for (std::int64_t c = 0; c < kc; ++c) {
        const float xv = xr[c], d = dyr[c];
        const float sv = fast_sigmoid(v[c] * xv);
        sr[c] = sv;
        block_dy[c] += d;
        block_num[c] += d * xv * sv;
        block_dnum[c] += d * xv * xv * sv * (1.0f - sv);
      }
    }
    for (std::int64_t c = 0; c < kc; ++c) {
      sum_dy[c] += static_cast<double>(block_dy[c]);
      sum_dy_num[c] += static_cast<double>(block_num[c]);
      sum_dy_dnum_dv[c] += static_cast<double>(block_dnum[c]);
    }
  }
  finish_gradients(s, gamma, mean, rstd, w, grads);
  // Pass 2: dx = dy gamma r (s + v x s (1 - s)) + (2 dvar / N_g) (x - mean).
  const float* __restrict a = w.coef0.data();
  const float* __restrict b = w.coef1.data();
  const float* __restrict m = w.coef2.data();
  for (std::int64_t p = 0; p < s.hw; ++p) {
    const float* __restrict xr = x + p * kc;
    const float* __restrict dyr = dy + p * kc;
    float* __restrict out = dx + p * kc;
    for (std::int64_t c = 0; c < kc; ++c) {
      const float xv = xr[c], sv = out[c];
      out[c] = dyr[c] * a[c] * (sv + v[c] * xv * sv * (1.0f - sv)) + b[c] * (xv - m[c]);
    }
  }
}

// ---- channels-last in explicit vectors, one register of the CPU's level -------------------------
//
// The loops above, auto-vectorised for AVX2, ran the forward output loop at 1.1-1.8 ns per
// element: GCC turned the exp's clamps into compare-and-blend chains on the result, and kept the
// block sums in memory. Written with GCC vectors of the level's width (core/cpu_dispatch.h), the
// same arithmetic made the forward 1.4x faster within a training step on an AVX2 CPU; the
// backward, which reads the activations saved in the forward pass from memory, was no faster
// within a step (docs/benchmarks.md, "AVX2 CPUs", item 9). A vector holds kLanes consecutive
// channels of one pixel, so these kernels need kLanes to divide K*C (every layer of the models
// here); they return false otherwise and the loops above run instead.

template <int kLanes>
using Lanes = Simd<float, kLanes>;

// The helpers take and give vectors by reference (a vector argument or result would tie them to
// an ABI); they are always inlined into the kernels.
template <int kLanes>
[[gnu::always_inline]] inline void load_lanes(const float* at, Lanes<kLanes>& v) {
  std::memcpy(&v, at, sizeof v);
}

template <int kLanes>
[[gnu::always_inline]] inline void store_lanes(float* at, const Lanes<kLanes>& v) {
  std::memcpy(at, &v, sizeof v);
}

// sigmoid(z) = 1 / (1 + fast_exp(-z)), lane by lane (fast_exp's steps and constants).
template <int kLanes>
[[gnu::always_inline]] inline void sigmoid_lanes(const Lanes<kLanes>& z_in, Lanes<kLanes>& out) {
  using Ints = Simd<std::int32_t, kLanes>;
  Lanes<kLanes> z = -z_in;
  z = z < kExpMin ? kExpMin : z;
  z = z > kExpMax ? kExpMax : z;
  const Lanes<kLanes> t = z * kLog2e + kRoundMagic;
  const Lanes<kLanes> n = t - kRoundMagic;
  const Ints ni = __builtin_bit_cast(Ints, t) - kRoundMagicBits;
  Lanes<kLanes> r = z - n * kLn2Hi;
  r = r - n * kLn2Lo;
  Lanes<kLanes> p = Lanes<kLanes>{} + kExpP0;
  p = p * r + kExpP1;
  p = p * r + kExpP2;
  p = p * r + kExpP3;
  p = p * r + kExpP4;
  p = p * r + kExpP5;
  const Lanes<kLanes> exp_r = p * (r * r) + r + 1.0f;
  const Ints two_to_n = (ni + 127) << 23;
  out = 1.0f / (1.0f + exp_r * __builtin_bit_cast(Lanes<kLanes>, two_to_n));
}

// Adds a block's float sums to the double sums of channels c0 .. c0 + kLanes.
template <int kLanes>
[[gnu::always_inline]] inline void widen_into(double* __restrict total,
                                              const Lanes<kLanes>& block) {
  for (int j = 0; j < kLanes; ++j) total[j] += static_cast<double>(block[j]);
}

// forward_sample_channels_last in vectors. The moments go one vector of channels at a time down a
// block of kBlockPixels pixels (in L1 by the second vector), in two interleaved float sums (the
// even and the odd pixels: the adds' latency, not their count, bounds a single chain).
struct ForwardSampleChannelsLast {
  template <int kLanes>
  [[gnu::always_inline]] static bool run(const float* __restrict x, float* __restrict y,
                                         const Shape& s, const float* __restrict v,
                                         const float* __restrict gamma,
                                         const float* __restrict beta, double eps, float* mean,
                                         float* rstd, Scratch& w) {
    const std::int64_t kc = s.kc;
    if (kc % kLanes != 0) return false;
    using V = Lanes<kLanes>;
    start_channels_last_moments(x, s, w);
    double* __restrict sum = w.acc0.data();
    double* __restrict sum_sq = w.acc1.data();
    const float* __restrict shift = w.coef1.data();
    for (std::int64_t p0 = 0; p0 < s.hw; p0 += kBlockPixels) {
      const std::int64_t p1 = std::min(s.hw, p0 + kBlockPixels);
      for (std::int64_t c0 = 0; c0 < kc; c0 += kLanes) {
        V sh, x0, x1;
        load_lanes<kLanes>(shift + c0, sh);
        V even{}, odd{}, even_sq{}, odd_sq{};
        std::int64_t p = p0;
        for (; p + 1 < p1; p += 2) {
          load_lanes<kLanes>(x + p * kc + c0, x0);
          load_lanes<kLanes>(x + (p + 1) * kc + c0, x1);
          const V d0 = x0 - sh, d1 = x1 - sh;
          even += d0;
          even_sq += d0 * d0;
          odd += d1;
          odd_sq += d1 * d1;
        }
        if (p < p1) {
          load_lanes<kLanes>(x + p * kc + c0, x0);
          const V d = x0 - sh;
          even += d;
          even_sq += d * d;
        }
        widen_into<kLanes>(sum + c0, even + odd);
        widen_into<kLanes>(sum_sq + c0, even_sq + odd_sq);
      }
    }
    finish_statistics(x, s, /*channels_last=*/true, gamma, eps, w, mean, rstd);
    // y = x sigmoid(v x) (r gamma) + beta.
    const float* __restrict scale = w.coef0.data();
    for (std::int64_t p = 0; p < s.hw; ++p) {
      for (std::int64_t c0 = 0; c0 < kc; c0 += kLanes) {
        V xv, vc, scale_c, beta_c, sv;
        load_lanes<kLanes>(x + p * kc + c0, xv);
        load_lanes<kLanes>(v + c0, vc);
        load_lanes<kLanes>(scale + c0, scale_c);
        load_lanes<kLanes>(beta + c0, beta_c);
        sigmoid_lanes<kLanes>(vc * xv, sv);
        store_lanes<kLanes>(y + p * kc + c0, xv * sv * scale_c + beta_c);
      }
    }
    return true;
  }
};

// backward_sample_channels_last in vectors, blocks as in the forward kernel. Per block and vector
// of channels, the sigmoids go into dx first, and the sums then read them back from L1: in one
// loop, each sum's chain waited on its element's exp and division (faster so on data in cache).
struct BackwardSampleChannelsLast {
  template <int kLanes>
  [[gnu::always_inline]] static bool run(const float* __restrict dy, const float* __restrict x,
                                         float* __restrict dx, const Shape& s,
                                         const float* __restrict v, const float* __restrict gamma,
                                         const float* mean, const float* rstd, double* grads,
                                         Scratch& w) {
    const std::int64_t kc = s.kc;
    if (kc % kLanes != 0) return false;
    using V = Lanes<kLanes>;
    double* __restrict sum_dy = w.acc0.data();
    double* __restrict sum_dy_num = w.acc1.data();
    double* __restrict sum_dy_dnum_dv = w.acc2.data();
    clear_sums(w);
    for (std::int64_t p0 = 0; p0 < s.hw; p0 += kBlockPixels) {
      const std::int64_t p1 = std::min(s.hw, p0 + kBlockPixels);
      for (std::int64_t c0 = 0; c0 < kc; c0 += kLanes) {
        V vc, xv, d, sv;
        load_lanes<kLanes>(v + c0, vc);
        for (std::int64_t p = p0; p < p1; ++p) {
          load_lanes<kLanes>(x + p * kc + c0, xv);
          sigmoid_lanes<kLanes>(vc * xv, sv);
          store_lanes<kLanes>(dx + p * kc + c0, sv);
        }
        V block_dy{}, block_num{}, block_dnum{};
        for (std::int64_t p = p0; p < p1; ++p) {
          load_lanes<kLanes>(x + p * kc + c0, xv);
          load_lanes<kLanes>(dy + p * kc + c0, d);
          load_lanes<kLanes>(dx + p * kc + c0, sv);
          block_dy += d;
          block_num += d * xv * sv;
          block_dnum += d * xv * xv * sv * (1.0f - sv);
        }
        widen_into<kLanes>(sum_dy + c0, block_dy);
        widen_into<kLanes>(sum_dy_num + c0, block_num);
        widen_into<kLanes>(sum_dy_dnum_dv + c0, block_dnum);
      }
    }
    finish_gradients(s, gamma, mean, rstd, w, grads);
    // dx = dy gamma r (s + v x s (1 - s)) + (2 dvar / N_g) (x - mean).
    const float* __restrict a = w.coef0.data();
    const float* __restrict b = w.coef1.data();
    const float* __restrict m = w.coef2.data();
    for (std::int64_t p = 0; p < s.hw; ++p) {
      for (std::int64_t c0 = 0; c0 < kc; c0 += kLanes) {
        V xv, sv, d, vc, ac, bc, mc;
        load_lanes<kLanes>(x + p * kc + c0, xv);
        load_lanes<kLanes>(dx + p * kc + c0, sv);
        load_lanes<kLanes>(dy + p * kc + c0, d);
        load_lanes<kLanes>(v + c0, vc);
        load_lanes<kLanes>(a + c0, ac);
        load_lanes<kLanes>(b + c0, bc);
        load_lanes<kLanes>(m + c0, mc);
        store_lanes<kLanes>(dx + p * kc + c0,
                            d * ac * (sv + vc * xv * sv * (1.0f - sv)) + bc * (xv - mc));
      }
    }
    return true;
  }
};

// ---- contiguous NCHW: one sample is [K*C, H*W], rows of H*W contiguous pixels -----------------

LPDT_CPU_CLONES void forward_sample_nchw(const float* __restrict x, float* __restrict y, Shape s,
                                         const float* __restrict v, const float* __restrict gamma,
                                         const float* __restrict beta, double eps, float* mean,
                                         float* rstd, Scratch& w) {
  for (std::int64_t c = 0; c < s.kc; ++c) {
    w.acc0[c] = 0.0;
    w.acc1[c] = 0.0;
    row_shifted_moments(x + c * s.hw, s.hw, group_shift(x, c, s, /*channels_last=*/false),
                        &w.acc0[c], &w.acc1[c]);
  }
  finish_statistics(x, s, /*channels_last=*/false, gamma, eps, w, mean, rstd);
  for (std::int64_t c = 0; c < s.kc; ++c) {
    const float* __restrict row = x + c * s.hw;
    float* __restrict out = y + c * s.hw;
    const float vc = v[c], scale = w.coef0[c], bc = beta[c];
    for (std::int64_t p = 0; p < s.hw; ++p) {
      const float xv = row[p];
      out[p] = xv * fast_sigmoid(vc * xv) * scale + bc;
    }
  }
}

LPDT_CPU_CLONES void backward_sample_nchw(const float* __restrict dy, const float* __restrict x,
                                          float* __restrict dx, Shape s, const float* __restrict v,
                                          const float* __restrict gamma, const float* mean,
                                          const float* rstd, double* grads, Scratch& w) {
  float* __restrict dy_num = w.row0.data();
  float* __restrict dy_dnum_dv = w.row1.data();
  // Pass 1, per channel: element-wise terms into row buffers (a vectorised map), then their sums.
  for (std::int64_t c = 0; c < s.kc; ++c) {
    const float* __restrict xr = x + c * s.hw;
    const float* __restrict dyr = dy + c * s.hw;
    float* __restrict sr = dx + c * s.hw;
    const float vc = v[c];
    for (std::int64_t p = 0; p < s.hw; ++p) {
      const float xv = xr[p], d = dyr[p];
      const float sv = fast_sigmoid(vc * xv);
      sr[p] = sv;
      dy_num[p] = d * xv * sv;
      dy_dnum_dv[p] = d * xv * xv * sv * (1.0f - sv);
    }
    w.acc0[c] = row_sum(dyr, s.hw);
    w.acc1[c] = row_sum(dy_num, s.hw);
    w.acc2[c] = row_sum(dy_dnum_dv, s.hw);
  }
  finish_gradients(s, gamma, mean, rstd, w, grads);
  for (std::int64_t c = 0; c < s.kc; ++c) {
    const float* __restrict xr = x + c * s.hw;
    const float* __restrict dyr = dy + c * s.hw;
    float* __restrict out = dx + c * s.hw;
    const float vc = v[c], a = w.coef0[c], b = w.coef1[c], m = w.coef2[c];
    for (std::int64_t p = 0; p < s.hw; ++p) {
      const float xv = xr[p], sv = out[p];
      out[p] = dyr[p] * a * (sv + vc * xv * sv * (1.0f - sv)) + b * (xv - m);
    }
  }
}

// ---- argument checks and layout ----------------------------------------------------------------

void check_per_channel(const at::Tensor& t, std::int64_t kc, const char* name) {
  LPDT_CHECK(
      t.dim() == 1 && t.size(0) == kc && t.scalar_type() == at::kFloat && t.device().is_cpu(),
      std::string("evonorm kernel: ") + name + " must be a [K*C] float32 CPU tensor");
}

Shape check_input(const at::Tensor& x, std::int64_t channels_per_group) {
  LPDT_CHECK(evonorm_s0_kernel_supports(x), "evonorm kernel: x must be a 4-D float32 CPU tensor");
  const std::int64_t kc = x.size(1);
  LPDT_CHECK(channels_per_group >= 1 && kc % channels_per_group == 0,
             "evonorm kernel: channels_per_group must divide the channel count");
  return Shape{x.size(2) * x.size(3), kc, channels_per_group};
}

// The layout the kernel runs in: x itself when channels-last or contiguous NCHW, else a
// contiguous NCHW copy. (A tensor contiguous in both formats, H = W = 1 or one channel, takes
// the NCHW order; the memory is the same.)
at::Tensor dense_input(const at::Tensor& x) { return is_channels_last(x) ? x : x.contiguous(); }

at::MemoryFormat format_of(const at::Tensor& dense) {
  return is_channels_last(dense) ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
}

}  // namespace

bool evonorm_s0_kernel_supports(const at::Tensor& x) {
  return x.defined() && x.dim() == 4 && x.scalar_type() == at::kFloat && x.device().is_cpu();
}

float evonorm_fast_exp(float z) { return fast_exp(z); }

EvoNormForward evonorm_s0_forward_cpu(const at::Tensor& x_in, const at::Tensor& v_in,
                                      const at::Tensor& gamma_in, const at::Tensor& beta_in,
                                      std::int64_t channels_per_group, double eps) {
  RECORD_FUNCTION("lpdt::evonorm_s0_forward", std::vector<c10::IValue>());
  const Shape s = check_input(x_in, channels_per_group);
  check_per_channel(v_in, s.kc, "v");
  check_per_channel(gamma_in, s.kc, "gamma");
  check_per_channel(beta_in, s.kc, "beta");
  const at::Tensor x = dense_input(x_in);
  const at::Tensor v = v_in.contiguous(), gamma = gamma_in.contiguous(),
                   beta = beta_in.contiguous();
  const std::int64_t b = x.size(0), groups = s.kc / s.cg;
  const bool channels_last = is_channels_last(x);
  EvoNormForward out;
  out.y = at::empty(x.sizes(), x.options().memory_format(format_of(x)));
  out.mean = at::empty({b, groups}, x.options());
  out.rstd = at::empty({b, groups}, x.options());
  const float* xp = x.data_ptr<float>();
  float* yp = out.y.data_ptr<float>();
  float* mp = out.mean.data_ptr<float>();
  float* rp = out.rstd.data_ptr<float>();
  const float* vp = v.data_ptr<float>();
  const float* gp = gamma.data_ptr<float>();
  const float* bp = beta.data_ptr<float>();
  const std::int64_t sample = s.hw * s.kc;
  at::parallel_for(0, b, /*grain_size=*/1, [&](std::int64_t begin, std::int64_t end) {
    Scratch w(s);
    for (std::int64_t n = begin; n < end; ++n) {
      if (channels_last) {
        if (!run_simd_kernel<ForwardSampleChannelsLast>(xp + n * sample, yp + n * sample, s, vp,
                                                        gp, bp, eps, mp + n * groups,
                                                        rp + n * groups, w)) {
          forward_sample_channels_last(xp + n * sample, yp + n * sample, s, vp, gp, bp, eps,
                                       mp + n * groups, rp + n * groups, w);
        }
      } else {
        forward_sample_nchw(xp + n * sample, yp + n * sample, s, vp, gp, bp, eps, mp + n * groups,
                            rp + n * groups, w);
      }
    }
  });
  return out;
}

EvoNormGradients evonorm_s0_backward_cpu(const at::Tensor& dy_in, const at::Tensor& x_in,
                                         const at::Tensor& v_in, const at::Tensor& gamma_in,
                                         const at::Tensor& mean_in, const at::Tensor& rstd_in,
                                         std::int64_t channels_per_group) {
  RECORD_FUNCTION("lpdt::evonorm_s0_backward", std::vector<c10::IValue>());
  const Shape s = check_input(x_in, channels_per_group);
  check_per_channel(v_in, s.kc, "v");
  check_per_channel(gamma_in, s.kc, "gamma");
  LPDT_CHECK(dy_in.sizes() == x_in.sizes() && dy_in.scalar_type() == at::kFloat,
             "evonorm kernel: dy must be float32 shaped like x");
  const std::int64_t b = x_in.size(0), groups = s.kc / s.cg;
  LPDT_CHECK(mean_in.numel() == b * groups && rstd_in.numel() == b * groups,
             "evonorm kernel: mean and rstd must be [b, groups]");
  const at::Tensor x = dense_input(x_in);
  const bool channels_last = is_channels_last(x);
  // dy arrives in whatever layout the next layer's backward produced (a broadcast for a sum).
  const at::Tensor dy = dy_in.contiguous(format_of(x));
  const at::Tensor v = v_in.contiguous(), gamma = gamma_in.contiguous();
  const at::Tensor mean = mean_in.contiguous(), rstd = rstd_in.contiguous();
  EvoNormGradients out;
  out.dx = at::empty(x.sizes(), x.options().memory_format(format_of(x)));
  // Per-sample parameter gradients [b, 3 (dv, dgamma, dbeta), K*C], summed below in sample order.
  at::Tensor per_sample = at::empty({b, 3, s.kc}, x.options().dtype(at::kDouble));
  const float* xp = x.data_ptr<float>();
  const float* dyp = dy.data_ptr<float>();
  float* dxp = out.dx.data_ptr<float>();
  const float* vp = v.data_ptr<float>();
  const float* gp = gamma.data_ptr<float>();
  const float* mp = mean.data_ptr<float>();
  const float* rp = rstd.data_ptr<float>();
  double* psp = per_sample.data_ptr<double>();
  const std::int64_t sample = s.hw * s.kc;
  at::parallel_for(0, b, /*grain_size=*/1, [&](std::int64_t begin, std::int64_t end) {
    Scratch w(s);
    for (std::int64_t n = begin; n < end; ++n) {
      if (channels_last) {
        if (!run_simd_kernel<BackwardSampleChannelsLast>(dyp + n * sample, xp + n * sample,
                                                         dxp + n * sample, s, vp, gp,
                                                         mp + n * groups, rp + n * groups,
                                                         psp + n * 3 * s.kc, w)) {
          backward_sample_channels_last(dyp + n * sample, xp + n * sample, dxp + n * sample, s,
                                        vp, gp, mp + n * groups, rp + n * groups,
                                        psp + n * 3 * s.kc, w);
        }
      } else {
        backward_sample_nchw(dyp + n * sample, xp + n * sample, dxp + n * sample, s, vp, gp,
                             mp + n * groups, rp + n * groups, psp + n * 3 * s.kc, w);
      }
    }
  });
  std::vector<double> totals(3 * s.kc, 0.0);
  for (std::int64_t n = 0; n < b; ++n) {
    const double* row = psp + n * 3 * s.kc;
    for (std::int64_t i = 0; i < 3 * s.kc; ++i) totals[i] += row[i];
  }
  const at::Tensor sums = at::from_blob(totals.data(), {3, s.kc}, at::kDouble).to(at::kFloat);
  out.dv = sums[0];
  out.dgamma = sums[1];
  out.dbeta = sums[2];
  return out;
}

// ---- scalar references -----------------------------------------------------------------------

namespace {

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

}  // namespace

EvoNormForward evonorm_s0_forward_reference(const at::Tensor& x, const at::Tensor& v,
                                            const at::Tensor& gamma, const at::Tensor& beta,
                                            std::int64_t channels_per_group, double eps) {
  const Shape s = check_input(x, channels_per_group);
  const std::int64_t b = x.size(0), h = x.size(2), wd = x.size(3), groups = s.kc / s.cg;
  const auto xa = x.accessor<float, 4>();
  const auto va = v.accessor<float, 1>();
  const auto ga = gamma.accessor<float, 1>();
  const auto ba = beta.accessor<float, 1>();
  EvoNormForward out;
  out.y = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  out.mean = at::empty({b, groups}, x.options());
  out.rstd = at::empty({b, groups}, x.options());
  auto ya = out.y.accessor<float, 4>();
  auto mean_a = out.mean.accessor<float, 2>();
  auto rstd_a = out.rstd.accessor<float, 2>();
  for (std::int64_t n = 0; n < b; ++n) {
    for (std::int64_t g = 0; g < groups; ++g) {
      const std::int64_t c0 = g * s.cg, c1 = (g + 1) * s.cg;
      double sum = 0.0;
      for (std::int64_t c = c0; c < c1; ++c)
        for (std::int64_t i = 0; i < h; ++i)
          for (std::int64_t j = 0; j < wd; ++j) sum += xa[n][c][i][j];
      const double count = static_cast<double>(s.cg * h * wd);
      const double mean = sum / count;
      double sum_sq = 0.0;
      for (std::int64_t c = c0; c < c1; ++c)
        for (std::int64_t i = 0; i < h; ++i)
          for (std::int64_t j = 0; j < wd; ++j) sum_sq += std::pow(xa[n][c][i][j] - mean, 2);
      const double r = 1.0 / std::sqrt(sum_sq / count + eps);
      mean_a[n][g] = static_cast<float>(mean);
      rstd_a[n][g] = static_cast<float>(r);
      for (std::int64_t c = c0; c < c1; ++c)
        for (std::int64_t i = 0; i < h; ++i)
          for (std::int64_t j = 0; j < wd; ++j) {
            const double xv = xa[n][c][i][j];
            ya[n][c][i][j] = static_cast<float>(xv * sigmoid(va[c] * xv) * r * ga[c] + ba[c]);
          }
    }
  }
  return out;
}

EvoNormGradients evonorm_s0_backward_reference(const at::Tensor& dy, const at::Tensor& x,
                                               const at::Tensor& v, const at::Tensor& gamma,
                                               const at::Tensor& mean, const at::Tensor& rstd,
                                               std::int64_t channels_per_group) {
  const Shape s = check_input(x, channels_per_group);
  const std::int64_t b = x.size(0), h = x.size(2), wd = x.size(3), groups = s.kc / s.cg;
  const auto xa = x.accessor<float, 4>();
  const auto dya = dy.accessor<float, 4>();
  const auto va = v.accessor<float, 1>();
  const auto ga = gamma.accessor<float, 1>();
  const auto ma = mean.accessor<float, 2>();
  const auto ra = rstd.accessor<float, 2>();
  std::vector<double> dv(s.kc, 0.0), dgamma(s.kc, 0.0), dbeta(s.kc, 0.0);
  EvoNormGradients out;
  out.dx = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  auto dxa = out.dx.accessor<float, 4>();
  for (std::int64_t n = 0; n < b; ++n) {
    for (std::int64_t g = 0; g < groups; ++g) {
      const std::int64_t c0 = g * s.cg, c1 = (g + 1) * s.cg;
      const double r = ra[n][g], mu = ma[n][g];
      const double count = static_cast<double>(s.cg * h * wd);
      double dr = 0.0;
      for (std::int64_t c = c0; c < c1; ++c)
        for (std::int64_t i = 0; i < h; ++i)
          for (std::int64_t j = 0; j < wd; ++j) {
            const double xv = xa[n][c][i][j], d = dya[n][c][i][j];
            const double sv = sigmoid(va[c] * xv), num = xv * sv;
            dbeta[c] += d;
            dgamma[c] += d * num * r;
            dv[c] += d * ga[c] * r * xv * xv * sv * (1.0 - sv);
            dr += d * ga[c] * num;
          }
      const double dvar = -0.5 * dr * r * r * r;
      for (std::int64_t c = c0; c < c1; ++c)
        for (std::int64_t i = 0; i < h; ++i)
          for (std::int64_t j = 0; j < wd; ++j) {
            const double xv = xa[n][c][i][j], d = dya[n][c][i][j];
            const double sv = sigmoid(va[c] * xv);
            const double dnum = d * ga[c] * r;
            dxa[n][c][i][j] = static_cast<float>(dnum * (sv + va[c] * xv * sv * (1.0 - sv)) +
                                                 dvar * 2.0 * (xv - mu) / count);
          }
    }
  }
  const auto to_tensor = [](const std::vector<double>& values) {
    return at::tensor(values, at::kDouble).to(at::kFloat);
  };
  out.dv = to_tensor(dv);
  out.dgamma = to_tensor(dgamma);
  out.dbeta = to_tensor(dbeta);
  return out;
}

}  // namespace lpdt::nn
