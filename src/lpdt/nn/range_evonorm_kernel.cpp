#include "lpdt/nn/range_evonorm_kernel.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/types.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <type_traits>
#include <vector>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"
#include "lpdt/nn/flat_group_scales.h"
#include "lpdt/nn/range_evonorm_saved_shape.h"

namespace lpdt::nn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// One (sample, node) slice of a channels-last tensor: element (pixel p, channel c) at
// base[p * pixel_stride + c].
struct Slice {
  std::int64_t pixels;        // H * W
  std::int64_t pixel_stride;  // k * C
  std::int64_t channels;      // C
};

// One group's chunks side by side: lane j of row t is element j * m + t of the group in NCHW
// order (chunk j, position t), so that one vector holds position t of every chunk.
constexpr std::int64_t kChunkLanes = 16;  // >= the reference's 16 chunks (range_chunks)

// The extremes of every chunk as the reference's torch.max / torch.min(dim) pick them, one chunk
// per lane: scanning positions in order, a lane takes v when !(v <= hi) (resp. !(v >= lo)),
// starting from -inf (+inf) at position 0. Without NaN that is each chunk's max (min) and its
// first occurrence; with a NaN (a diverged step) it is the sequential rule itself, so the
// positions always name an element of the chunk. chunked: [m, kChunkLanes]; outputs [kChunkLanes].
// The chunks' lanes go kLanes at a time, one register of the level (core/cpu_dispatch.h).
struct ScanChunks {
  template <int kLanes>
  [[gnu::always_inline]] static void run(const float* __restrict chunked, std::int64_t m,
                                         float* __restrict hi_out, float* __restrict lo_out,
                                         std::int32_t* __restrict hi_at_out,
                                         std::int32_t* __restrict lo_at_out) {
    static_assert(kChunkLanes % kLanes == 0, "the chunk lanes are whole registers");
    constexpr int kVectors = kChunkLanes / kLanes;
    using Lanes = Simd<float, kLanes>;
    using Positions = Simd<std::int32_t, kLanes>;
    Lanes hi[kVectors], lo[kVectors];
    Positions hi_at[kVectors], lo_at[kVectors];
    constexpr float kInf = std::numeric_limits<float>::infinity();
    for (int u = 0; u < kVectors; ++u) {
      hi[u] = Lanes{} - kInf;
      lo[u] = Lanes{} + kInf;
      hi_at[u] = Positions{};
      lo_at[u] = Positions{};
    }
    for (std::int64_t t = 0; t < m; ++t) {
      const Positions position = Positions{} + static_cast<std::int32_t>(t);
      for (int u = 0; u < kVectors; ++u) {
        Lanes v;
        std::memcpy(&v, chunked + t * kChunkLanes + u * kLanes, sizeof v);
        const Positions up = ~(v <= hi[u]), down = ~(v >= lo[u]);
        hi[u] = up ? v : hi[u];
        hi_at[u] = up ? position : hi_at[u];
        lo[u] = down ? v : lo[u];
        lo_at[u] = down ? position : lo_at[u];
      }
    }
    for (int u = 0; u < kVectors; ++u) {
      for (int j = 0; j < kLanes; ++j) {
        hi_out[u * kLanes + j] = hi[u][j];
        lo_out[u * kLanes + j] = lo[u][j];
        hi_at_out[u * kLanes + j] = hi_at[u][j];
        lo_at_out[u * kLanes + j] = lo_at[u][j];
      }
    }
  }
};

// Range statistic of every group of one slice (reference spec 7.3): the groups' elements in
// NCHW order (channel-major), split into `chunks` chunks of m; for each chunk the first max and
// first min in that order (torch.max(dim) picks one element for the gradient). Writes
// scale[g] = 1 / (mean_j (max_j - min_j) * factor + 1e-5) and the offsets of the max/min elements.
// This version copies each group channel-major and scans its chunks in the reference's order
// itself; group_ranges below takes it for inputs with a NaN and for chunks that do not split into
// runs of pixels.
void group_ranges_sequential(const float* x, const Slice& s, std::int64_t groups,
                             std::int64_t chunks, float factor, float* scale, std::int32_t* arg_max,
                             std::int32_t* arg_min) {
  LPDT_CHECK(chunks >= 1 && chunks <= kChunkLanes, "group_ranges: chunks");
  const std::int64_t cg = s.channels / groups, m = cg * s.pixels / chunks;
  // The chunks side by side (lanes past `chunks` stay 0 and are not read back). A strided,
  // branchy scalar walk over the channels-last slice took 16% of an 8-bit step.
  std::vector<float> chunked(static_cast<std::size_t>(m * kChunkLanes), 0.0f);
  float hi[kChunkLanes], lo[kChunkLanes];
  std::int32_t hi_at[kChunkLanes], lo_at[kChunkLanes];
  for (std::int64_t g = 0; g < groups; ++g) {
    // Element e = cl * pixels + p of the group: chunk e / m, position e % m, counted as e runs.
    std::int64_t j = 0, t = 0;
    for (std::int64_t cl = 0; cl < cg; ++cl) {
      const float* channel = x + g * cg + cl;
      for (std::int64_t p = 0; p < s.pixels; ++p) {
        chunked[t * kChunkLanes + j] = channel[p * s.pixel_stride];
        if (++t == m) t = 0, ++j;
      }
    }
    run_simd_kernel<ScanChunks>(chunked.data(), m, hi, lo, hi_at, lo_at);
    float sum = 0.0f;
    for (std::int64_t c = 0; c < chunks; ++c) {
      // Element c * m + t of the group: channel g * cg + e / pixels, pixel e % pixels.
      const std::int64_t max_e = c * m + hi_at[c], min_e = c * m + lo_at[c];
      arg_max[g * chunks + c] = static_cast<std::int32_t>((max_e % s.pixels) * s.pixel_stride +
                                                          g * cg + max_e / s.pixels);
      arg_min[g * chunks + c] = static_cast<std::int32_t>((min_e % s.pixels) * s.pixel_stride +
                                                          g * cg + min_e / s.pixels);
      sum += hi[c] - lo[c];
    }
    const float range = sum / static_cast<float>(chunks);
    scale[g] = 1.0f / (range * factor + 1e-5f);
  }
}

// Runs body(c) over a pixel's channels in fixed chunks of 16, then the rest one by one: a pixel's
// C channels are contiguous but as few as 16, and a plain `c < C` loop that short is left scalar
// by GCC's vectoriser (benchmarks item 12); a fixed 16 is one AVX-512 vector.
constexpr std::int64_t kChannelChunk = 16;
template <typename Body>
inline __attribute__((always_inline)) void for_each_channel(std::int64_t channels, Body&& body) {
  std::int64_t c = 0;
  for (; c + kChannelChunk <= channels; c += kChannelChunk) {
#pragma omp simd
    for (std::int64_t j = 0; j < kChannelChunk; ++j) body(c + j);
  }
  for (; c < channels; ++c) body(c);
}

// The shortest run of pixels that group_ranges scans per channel; below it (7x7 maps whose chunks
// cross channels every 7 pixels) the sequential version's copy costs as little.
constexpr std::int64_t kMinRun = 4;

// Per-channel extremes of one slice's runs of pixels [r * run, (r + 1) * run), each by
// ScanChunks' sequential rule (a channel takes v when !(v <= hi), resp. !(v >= lo), from -inf
// resp. +inf at the run's first pixel), reading each pixel's contiguous channels as one vector.
// hi, lo: [runs, C]; hi_at, lo_at: the pixels. Returns whether the slice holds a NaN.
// Element types: float (the activations), or 8-bit codes read as int32 lanes (8-bit models: a
// code's order is its value's, since dequantization (q - z) * s with s > 0 is strictly increasing
// on the 256 codes; codes cannot be NaN, and the minimum and maximum codes 0 and 255 stand in for
// the infinities: a run's first pixel is taken either way).
template <typename T, typename V>
inline __attribute__((always_inline)) bool run_extremes_of(const T* __restrict x, const Slice& s,
                                                           std::int64_t run, V* __restrict hi,
                                                           V* __restrict lo,
                                                           std::int32_t* __restrict hi_at,
                                                           std::int32_t* __restrict lo_at,
                                                           std::int32_t* __restrict nan_seen) {
  constexpr bool kFloat = std::is_same_v<T, float>;
  const V lowest = kFloat ? -std::numeric_limits<float>::infinity() : V{0};
  const V highest = kFloat ? std::numeric_limits<float>::infinity() : V{255};
  const std::int64_t channels = s.channels;
  for (std::int64_t c = 0; c < channels; ++c) nan_seen[c] = 0;
  for (std::int64_t r = 0; r * run < s.pixels; ++r) {
    V* __restrict h = hi + r * channels;
    V* __restrict l = lo + r * channels;
    std::int32_t* __restrict h_at = hi_at + r * channels;
    std::int32_t* __restrict l_at = lo_at + r * channels;
    for (std::int64_t c = 0; c < channels; ++c) {
      h[c] = lowest;
      l[c] = highest;
      h_at[c] = l_at[c] = static_cast<std::int32_t>(r * run);
    }
    for (std::int64_t p = r * run; p < (r + 1) * run; ++p) {
      const T* __restrict xp = x + p * s.pixel_stride;
      const std::int32_t at = static_cast<std::int32_t>(p);
      for_each_channel(channels, [&](std::int64_t c) {
        const V v = static_cast<V>(xp[c]);
        const bool up = !(v <= h[c]), down = !(v >= l[c]);
        h[c] = up ? v : h[c];
        h_at[c] = up ? at : h_at[c];
        l[c] = down ? v : l[c];
        l_at[c] = down ? at : l_at[c];
        if constexpr (kFloat) nan_seen[c] |= v != v ? 1 : 0;
      });
    }
  }
  std::int32_t any = 0;
  for (std::int64_t c = 0; c < channels; ++c) any |= nan_seen[c];
  return any != 0;
}
LPDT_CPU_CLONES bool run_extremes(const float* __restrict x, const Slice& s, std::int64_t run,
                                  float* __restrict hi, float* __restrict lo,
                                  std::int32_t* __restrict hi_at, std::int32_t* __restrict lo_at,
                                  std::int32_t* __restrict nan_seen) {
  return run_extremes_of<float, float>(x, s, run, hi, lo, hi_at, lo_at, nan_seen);
}
LPDT_CPU_CLONES void run_extremes(const std::uint8_t* __restrict codes, const Slice& s,
                                  std::int64_t run, std::int32_t* __restrict hi,
                                  std::int32_t* __restrict lo, std::int32_t* __restrict hi_at,
                                  std::int32_t* __restrict lo_at,
                                  std::int32_t* __restrict nan_seen) {
  run_extremes_of<std::uint8_t, std::int32_t>(codes, s, run, hi, lo, hi_at, lo_at, nan_seen);
}

// One 8-bit code's value, as quant::dequantize computes it.
struct CodeValues {
  float scale, zero_point;
  float operator()(std::int32_t code) const {
    return (static_cast<float>(code) - zero_point) * scale;
  }
};

// Each chunk's first max and first min from its runs' extremes (run_extremes, [runs, C]), in
// chunk order, and the group scales 1 / (mean_j (max_j - min_j) * factor + 1e-5), the chunk
// ranges taken between value(max) and value(min) and summed in chunk order.
template <typename V, typename Value>
void combine_runs(const V* hi, const V* lo, const std::int32_t* hi_at, const std::int32_t* lo_at,
                  const Value& value, const Slice& s, std::int64_t groups, std::int64_t chunks,
                  std::int64_t run, float factor, float* scale, std::int32_t* arg_max,
                  std::int32_t* arg_min) {
  const std::int64_t cg = s.channels / groups, m = cg * s.pixels / chunks;
  for (std::int64_t g = 0; g < groups; ++g) {
    float sum = 0.0f;
    for (std::int64_t j = 0; j < chunks; ++j) {
      std::int64_t max_at = -1, min_at = -1;  // indices into the [runs, C] extremes
      for (std::int64_t e = j * m; e < (j + 1) * m; e += run) {
        const std::int64_t at = (e % s.pixels) / run * s.channels + g * cg + e / s.pixels;
        if (max_at < 0 || !(hi[at] <= hi[max_at])) max_at = at;
        if (min_at < 0 || !(lo[at] >= lo[min_at])) min_at = at;
      }
      const std::int64_t max_c = max_at % s.channels, min_c = min_at % s.channels;
      arg_max[g * chunks + j] = static_cast<std::int32_t>(hi_at[max_at] * s.pixel_stride + max_c);
      arg_min[g * chunks + j] = static_cast<std::int32_t>(lo_at[min_at] * s.pixel_stride + min_c);
      sum += value(hi[max_at]) - value(lo[min_at]);
    }
    const float range = sum / static_cast<float>(chunks);
    scale[g] = 1.0f / (range * factor + 1e-5f);
  }
}

// group_ranges_sequential's results without its copy. With run = gcd(m, pixels), chunk j (the
// group's elements [j m, (j + 1) m) in NCHW order) is m / run runs of pixels, each within one
// channel, in order; without NaN its first max is the first run maximum that no earlier run's
// reaches (ties keep the earlier element), and likewise the min. So one pass over the slice in
// memory order (run_extremes) and a combination per chunk give the same values and positions;
// a slice with a NaN, or runs shorter than kMinRun, take the sequential version.
// 8-bit models pass the codes and their dequantization (`values`): extremes are found on the
// codes, and each chunk's max - min is taken between the two values dequantized as
// quant::dequantize computes them, so the statistic equals the one computed from the values.
void group_ranges(const float* x, const Slice& s, std::int64_t groups, std::int64_t chunks,
                  float factor, float* scale, std::int32_t* arg_max, std::int32_t* arg_min) {
  LPDT_CHECK(chunks >= 1 && chunks <= kChunkLanes, "group_ranges: chunks");
  const std::int64_t cg = s.channels / groups, m = cg * s.pixels / chunks;
  const std::int64_t run = std::gcd(m, s.pixels);
  const auto sequential = [&] {
    group_ranges_sequential(x, s, groups, chunks, factor, scale, arg_max, arg_min);
  };
  if (run < kMinRun) return sequential();
  const std::size_t extremes = static_cast<std::size_t>(s.pixels / run * s.channels);
  std::vector<float> hi(extremes), lo(extremes);
  std::vector<std::int32_t> hi_at(extremes), lo_at(extremes), nan_seen(s.channels);
  if (run_extremes(x, s, run, hi.data(), lo.data(), hi_at.data(), lo_at.data(), nan_seen.data()))
    return sequential();
  combine_runs(
      hi.data(), lo.data(), hi_at.data(), lo_at.data(), [](float v) { return v; }, s, groups,
      chunks, run, factor, scale, arg_max, arg_min);
}

void group_ranges(const std::uint8_t* codes, const CodeValues& values, const Slice& s,
                  std::int64_t groups, std::int64_t chunks, float factor, float* scale,
                  std::int32_t* arg_max, std::int32_t* arg_min) {
  LPDT_CHECK(chunks >= 1 && chunks <= kChunkLanes, "group_ranges: chunks");
  const std::int64_t cg = s.channels / groups, m = cg * s.pixels / chunks;
  const std::int64_t run = std::gcd(m, s.pixels);
  if (run < kMinRun) {
    // The sequential version on the slice's values (short runs: 7x7 maps and the like).
    std::vector<float> dense(static_cast<std::size_t>(s.pixels * s.channels));
    for (std::int64_t p = 0; p < s.pixels; ++p) {
      for (std::int64_t c = 0; c < s.channels; ++c) {
        dense[p * s.channels + c] = values(codes[p * s.pixel_stride + c]);
      }
    }
    group_ranges_sequential(dense.data(), Slice{s.pixels, s.channels, s.channels}, groups, chunks,
                            factor, scale, arg_max, arg_min);
    // Offsets back to the slice's pixel stride.
    for (std::int64_t i = 0; i < groups * chunks; ++i) {
      for (std::int32_t* at : {arg_max + i, arg_min + i}) {
        *at = static_cast<std::int32_t>(*at / s.channels * s.pixel_stride + *at % s.channels);
      }
    }
    return;
  }
  const std::size_t extremes = static_cast<std::size_t>(s.pixels / run * s.channels);
  std::vector<std::int32_t> hi(extremes), lo(extremes), hi_at(extremes), lo_at(extremes),
      unused(s.channels);
  run_extremes(codes, s, run, hi.data(), lo.data(), hi_at.data(), lo_at.data(), unused.data());
  combine_runs(hi.data(), lo.data(), hi_at.data(), lo_at.data(), values, s, groups, chunks, run,
               factor, scale, arg_max, arg_min);
}

// Per-channel sums over one slice's pixels of (x - center[c]) (squared when `square`).
LPDT_CPU_CLONES void channel_sums(const float* __restrict x, const Slice& s,
                                  const float* __restrict center, bool square,
                                  float* __restrict sums) {
  for (std::int64_t c = 0; c < s.channels; ++c) sums[c] = 0.0f;
  for (std::int64_t p = 0; p < s.pixels; ++p) {
    const float* __restrict xp = x + p * s.pixel_stride;
    if (square) {
      for_each_channel(s.channels, [&](std::int64_t c) {
        const float d = xp[c] - center[c];
        sums[c] += d * d;
      });
    } else {
      for_each_channel(s.channels, [&](std::int64_t c) { sums[c] += xp[c] - center[c]; });
    }
  }
}

// The "std" statistic of every group of one slice (EvoNorm-S0's, eq. 4): mean[g] and
// scale[g] = 1 / sqrt(biased variance + eps) over the group's cg channels of every pixel. Two
// passes (the mean, then squared deviations from it), each accumulating per channel over the
// pixels (vectorised over channels) and then per group in double.
void group_stds(const float* x, const Slice& s, std::int64_t groups, float* mean, float* scale) {
  const std::int64_t cg = s.channels / groups;
  const double count = static_cast<double>(cg * s.pixels);
  std::vector<float> center(static_cast<std::size_t>(s.channels), 0.0f), sums(center.size());
  channel_sums(x, s, center.data(), /*square=*/false, sums.data());
  for (std::int64_t g = 0; g < groups; ++g) {
    double sum = 0.0;
    for (std::int64_t c = g * cg; c < (g + 1) * cg; ++c) sum += sums[c];
    mean[g] = static_cast<float>(sum / count);
    for (std::int64_t c = g * cg; c < (g + 1) * cg; ++c) center[c] = mean[g];
  }
  channel_sums(x, s, center.data(), /*square=*/true, sums.data());
  for (std::int64_t g = 0; g < groups; ++g) {
    double squares = 0.0;
    for (std::int64_t c = g * cg; c < (g + 1) * cg; ++c) squares += sums[c];
    scale[g] = static_cast<float>(1.0 / std::sqrt(squares / count + kStdEpsilon));
  }
}

// The std statistic's part of the input gradient over one slice: dx += a[c] * (x - m[c]), with
// a and m the channel's group coefficient and mean.
LPDT_CPU_CLONES void add_deviation_gradient(const float* __restrict x, float* __restrict dx,
                                            const Slice& s, const float* __restrict a,
                                            const float* __restrict m) {
  for (std::int64_t p = 0; p < s.pixels; ++p) {
    const float* __restrict xp = x + p * s.pixel_stride;
    float* __restrict dxp = dx + p * s.pixel_stride;
    for_each_channel(s.channels, [&](std::int64_t c) { dxp[c] += a[c] * (xp[c] - m[c]); });
  }
}

// out = x * hsig(x * v) * s_c * gamma + beta over one slice; s_c = the channel's group scale.
LPDT_CPU_CLONES void output_pass(const float* __restrict x, float* __restrict out, const Slice& s,
                                 const float* __restrict v, const float* __restrict s_c,
                                 const float* __restrict gamma, const float* __restrict beta) {
  for (std::int64_t p = 0; p < s.pixels; ++p) {
    const float* __restrict xp = x + p * s.pixel_stride;
    float* __restrict op = out + p * s.pixel_stride;
    for_each_channel(s.channels, [&](std::int64_t c) {
      const float h = std::min(std::max(xp[c] * v[c] / 6.0f + 0.5f, 0.0f), 1.0f);
      op[c] = xp[c] * h * s_c[c] * gamma[c] + beta[c];
    });
  }
}

// Backward of output_pass (without the range statistic's part): dx, and per-channel partial sums
// of the gradients of v, gamma, beta and of the group scale (summed per group by the caller).
// gamma and the group scale enter the output as the product n * s_c * gamma, so both gradients
// are one sum, sum_p dy n, times the other factor: one accumulator per channel for the two, and
// dn = dy * (gamma s_c) with the product formed once per channel. The division by 6 of the
// forward's z = x v / 6 + 1/2 is kept (the clamp's mask must be the forward's); its derivative's
// 1/6 is a multiplication.
LPDT_CPU_CLONES void backward_pass(const float* __restrict dy, const float* __restrict x,
                                   float* __restrict dx, const Slice& s, const float* __restrict v,
                                   const float* __restrict s_c, const float* __restrict gamma,
                                   float* __restrict dv, float* __restrict dgamma,
                                   float* __restrict dbeta, float* __restrict ds_c) {
  std::vector<float> products(static_cast<std::size_t>(2 * s.channels), 0.0f);
  float* __restrict gamma_s = products.data();
  float* __restrict dy_n = products.data() + s.channels;
  for (std::int64_t c = 0; c < s.channels; ++c) gamma_s[c] = gamma[c] * s_c[c];
  constexpr float kSixth = 1.0f / 6.0f;
  for (std::int64_t p = 0; p < s.pixels; ++p) {
    const float* __restrict dyp = dy + p * s.pixel_stride;
    const float* __restrict xp = x + p * s.pixel_stride;
    float* __restrict dxp = dx + p * s.pixel_stride;
    for_each_channel(s.channels, [&](std::int64_t c) {
      const float z = xp[c] * v[c] / 6.0f + 0.5f;
      const float h = std::min(std::max(z, 0.0f), 1.0f);
      const float inside = (z >= 0.0f && z <= 1.0f) ? 1.0f : 0.0f;  // clamp's gradient mask
      const float d = dyp[c];
      dbeta[c] += d;
      dy_n[c] += d * (xp[c] * h);
      const float dn = d * gamma_s[c];
      const float dz = dn * xp[c] * inside * kSixth;  // through hsig(z), z = x v
      dxp[c] = dn * h + dz * v[c];
      dv[c] += dz * xp[c];
    });
  }
  for (std::int64_t c = 0; c < s.channels; ++c) {
    dgamma[c] += dy_n[c] * s_c[c];
    ds_c[c] += dy_n[c] * gamma[c];
  }
}

// Where a kernel reads one sample of x: the float tensor itself (fp32 models), or its codes
// dequantized into a per-thread buffer (8-bit models). The buffer holds one sample of every node
// (64 KiB for a node's 16 x 32 x 32 activations) and stays in cache between the dequantization
// and the pass reading it, so no float copy of the activations is allocated. (It is not faster
// than dequantizing the whole tensor: docs/benchmarks.md, low precision item 19.)
class SampleInput {
 public:
  SampleInput(const at::Tensor& x, const quant::QuantizedTensor& codes, std::int64_t k)
      : x_(x), codes_(codes) {
    if (codes_.codes.defined()) {
      view_ = quant::node_view(codes_.codes, k);
      buffer_.resize(static_cast<std::size_t>(view_.sample_stride));
    }
  }
  // The sample's first element (node 0, pixel 0), channels-last with k*C floats per pixel.
  const float* sample(std::int64_t n) {
    if (!codes_.codes.defined()) return x_.data_ptr<float>() + n * x_.stride(0);
    quant::dequantize_sample(codes_, view_, n, buffer_.data());
    return buffer_.data();
  }

 private:
  const at::Tensor& x_;
  const quant::QuantizedTensor& codes_;
  quant::NodeView view_;
  std::vector<float> buffer_;
};

// Where the backward pass reads one sample of its output gradient: dy itself, or, when the layer
// quantizes its output gradient (8-bit models: the reference's quantize_grad after the norm),
// that sample fake-quantized into a per-thread buffer, with the values fake_quantize would give.
class SampleGradient {
 public:
  SampleGradient(const at::Tensor& dy, const quant::SampleQuantizer* quantizer)
      : dy_(dy), quantizer_(quantizer) {
    if (quantizer_ != nullptr) buffer_.resize(static_cast<std::size_t>(dy_.stride(0)));
  }
  const float* sample(std::int64_t n) {
    const float* raw = dy_.data_ptr<float>() + n * dy_.stride(0);
    if (quantizer_ == nullptr) return raw;
    quantizer_->fake_quantize_sample(raw, buffer_.data(), n);
    return buffer_.data();
  }

 private:
  const at::Tensor& dy_;
  const quant::SampleQuantizer* quantizer_;
  std::vector<float> buffer_;
};

struct RangeEvoNormFunction : torch::autograd::Function<RangeEvoNormFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x_in, const at::Tensor& qv,
                            const at::Tensor& qgamma, const at::Tensor& qbeta,
                            const at::Tensor& codes, const at::Tensor& code_scale,
                            const at::Tensor& code_zero, const RangeEvoNormShape& shape) {
    const std::int64_t k = shape.k;
    // 8-bit models compute from the codes (what the simulated quantizer's values are exactly),
    // one sample at a time; fp32 models from x.
    const quant::QuantizedTensor q{codes.numel() > 0 ? codes : at::Tensor(), code_scale, code_zero};
    const at::Tensor x =
        q.codes.defined() ? at::Tensor() : x_in.detach().contiguous(at::MemoryFormat::ChannelsLast);
    const std::int64_t b = x_in.size(0), c = shape.channels, g = shape.groups, j = shape.chunks;
    const Slice slice{x_in.size(2) * x_in.size(3), k * c, c};
    const bool std_statistic = shape.statistic == GroupStatistic::kStd;
    at::Tensor s = at::empty({b, k, g}, at::kFloat);
    // The range statistic's extremes ([b, k, G, chunks]) or the std statistic's group means.
    at::Tensor arg_max, arg_min, mean;
    if (std_statistic) {
      mean = at::empty({b, k, g}, at::kFloat);
    } else {
      arg_max = at::empty({b, k, g, j}, at::kInt);
      arg_min = at::empty_like(arg_max);
    }
    // The range statistic of 8-bit models is found on the codes themselves (group_ranges):
    // no dequantized copy of the input for this pass.
    const bool ranges_of_codes = q.codes.defined() && !std_statistic;
    at::parallel_for(0, b, 1, [&](std::int64_t begin, std::int64_t end) {
      SampleInput input(x, q, k);
      for (std::int64_t n = begin; n < end; ++n) {
        const float* sample_x = ranges_of_codes ? nullptr : input.sample(n);
        for (std::int64_t node = 0; node < k; ++node) {
          const std::int64_t item = n * k + node;
          const auto range_factor = static_cast<float>(shape.range_factor);
          float* scales = s.data_ptr<float>() + item * g;
          std::int32_t* max_at = std_statistic ? nullptr : arg_max.data_ptr<std::int32_t>();
          std::int32_t* min_at = std_statistic ? nullptr : arg_min.data_ptr<std::int32_t>();
          if (std_statistic) {
            group_stds(sample_x + node * c, slice, g, mean.data_ptr<float>() + item * g, scales);
          } else if (ranges_of_codes) {
            const std::uint8_t* codes_at =
                q.codes.data_ptr<std::uint8_t>() + n * slice.pixels * slice.pixel_stride + node * c;
            const CodeValues values{q.scale.data_ptr<float>()[node],
                                    q.zero_point.data_ptr<float>()[node]};
            group_ranges(codes_at, values, slice, g, j, range_factor, scales, max_at + item * g * j,
                         min_at + item * g * j);
          } else {
            group_ranges(sample_x + node * c, slice, g, j, range_factor, scales,
                         max_at + item * g * j, min_at + item * g * j);
          }
        }
      }
    });
    // A flat group's 1e5 takes its node's largest other scale (flat_group_scales.h); the
    // backward pass sees 0 there, as that scale does not depend on the group's range.
    const SettledGroupScales settled =
        std_statistic ? SettledGroupScales{s, s} : settle_flat_group_scales(s);
    const at::Tensor qs = shape.scale_bits > 0 ? quantize_group_scales(settled.forward, k,
                                                                      shape.scale_bits,
                                                                      shape.scale_scheme)
                                               : settled.forward;
    // Each channel's group scale: [b, k*C].
    const at::Tensor s_c =
        qs.view({b, k * g, 1}).expand({b, k * g, c / g}).reshape({b, k * c}).contiguous();
    at::Tensor out = at::empty(
        x_in.sizes(),
        at::TensorOptions().dtype(at::kFloat).memory_format(at::MemoryFormat::ChannelsLast));
    const at::Tensor v = qv.contiguous(), gamma = qgamma.contiguous(), beta = qbeta.contiguous();
    const auto sample_stride = slice.pixels * slice.pixel_stride;
    at::parallel_for(0, b, 1, [&](std::int64_t begin, std::int64_t end) {
      SampleInput input(x, q, k);
      const Slice all{slice.pixels, k * c, k * c};  // all nodes' channels at once
      for (std::int64_t n = begin; n < end; ++n) {
        output_pass(input.sample(n), out.data_ptr<float>() + n * sample_stride, all,
                    v.data_ptr<float>(), s_c.data_ptr<float>() + n * k * c, gamma.data_ptr<float>(),
                    beta.data_ptr<float>());
      }
    });
    // 8-bit models keep the input's codes (1 byte per element); fp32 keeps x itself.
    if (q.codes.defined()) {
      ctx->save_for_backward(
          {codes, code_scale, code_zero, v, gamma, settled.backward, qs, arg_max, arg_min, mean});
    } else {
      ctx->save_for_backward(
          {x, at::Tensor(), at::Tensor(), v, gamma, settled.backward, qs, arg_max, arg_min, mean});
    }
    save_shape(ctx, shape);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    RECORD_FUNCTION("lpdt::range_evonorm_backward", std::vector<c10::IValue>());
    const auto saved = ctx->get_saved_variables();
    const RangeEvoNormShape shape = load_shape(ctx);
    const std::int64_t k = shape.k, c = shape.channels, g = shape.groups, j = shape.chunks;
    const auto factor = static_cast<float>(shape.range_factor);
    const bool codes = saved[0].scalar_type() == at::kByte;
    const quant::QuantizedTensor q{codes ? saved[0] : at::Tensor(), saved[1], saved[2]};
    const at::Tensor x = codes ? at::Tensor() : saved[0];
    const at::Tensor &v = saved[3], &gamma = saved[4], &s = saved[5], &qs = saved[6],
                     &arg_max = saved[7], &arg_min = saved[8], &mean = saved[9];
    const at::Tensor dy = grad[0].contiguous(at::MemoryFormat::ChannelsLast);
    // 8-bit models: the output gradient at grad_bits (per node [min, max], stochastic), as the
    // reference's quantize_grad after the norm, quantized sample by sample as it is read.
    std::optional<quant::SampleQuantizer> dy_quantizer;
    if (shape.quantize_output_grad) {
      dy_quantizer.emplace(quant::node_view(dy, k), quant::tensor_range(dy, k),
                           shape.output_grad_request);
    }
    const std::int64_t b = dy.size(0), kc = k * c;
    const Slice all{dy.size(2) * dy.size(3), kc, kc};
    const auto sample_stride = all.pixels * all.pixel_stride;
    const at::Tensor s_c =
        qs.view({b, k * g, 1}).expand({b, k * g, c / g}).reshape({b, kc}).contiguous();
    at::Tensor dx = at::empty_like(dy);
    // Per-sample partial sums, added in sample order afterwards: deterministic for any threads.
    at::Tensor partial = at::zeros({4, b, kc}, at::kFloat);  // dv, dgamma, dbeta, ds_c
    at::parallel_for(0, b, 1, [&](std::int64_t begin, std::int64_t end) {
      SampleInput input(x, q, k);
      SampleGradient output_grad(dy, dy_quantizer ? &*dy_quantizer : nullptr);
      for (std::int64_t n = begin; n < end; ++n) {
        float* base = partial.data_ptr<float>() + n * kc;
        backward_pass(output_grad.sample(n), input.sample(n),
                      dx.data_ptr<float>() + n * sample_stride, all, v.data_ptr<float>(),
                      s_c.data_ptr<float>() + n * kc, gamma.data_ptr<float>(), base, base + b * kc,
                      base + 2 * b * kc, base + 3 * b * kc);
      }
    });
    const at::Tensor sums = partial.sum(1);  // [4, k*C]
    // The group scale's gradient (straight through Q(s)) back to the range statistic:
    // s = 1 / (R f + eps) -> dR = -ds s^2 f; R = mean_j (max_j - min_j).
    const at::Tensor ds = partial[3].view({b, k, g, c / g}).sum(-1);  // [b, k, G]
    float* dxp = dx.data_ptr<float>();
    if (mean.defined()) {
      // s = (var + eps)^(-1/2), var = mean_e (x_e - mu)^2 over the group's N elements:
      // dx_e += ds * (-1/2) s^3 * 2 (x_e - mu) / N (the mean's own term sums to 0).
      const std::int64_t cg = c / g, count = cg * all.pixels;
      const at::Tensor coef = (-ds * s * s * s / static_cast<double>(count)).contiguous();
      // Per channel: [b, k*C] coefficients and means (each group's broadcast over its channels).
      const auto per_channel = [&](const at::Tensor& per_group) {
        return per_group.view({b, k * g, 1}).expand({b, k * g, cg}).reshape({b, kc}).contiguous();
      };
      const at::Tensor a_c = per_channel(coef), m_c = per_channel(mean);
      const Slice one_node{all.pixels, kc, c};
      at::parallel_for(0, b, 1, [&](std::int64_t begin, std::int64_t end) {
        SampleInput input(x, q, k);
        for (std::int64_t n = begin; n < end; ++n) {
          const float* sample_x = input.sample(n);
          for (std::int64_t node = 0; node < k; ++node) {
            const std::int64_t channel = n * kc + node * c;
            add_deviation_gradient(sample_x + node * c, dxp + n * sample_stride + node * c,
                                   one_node, a_c.data_ptr<float>() + channel,
                                   m_c.data_ptr<float>() + channel);
          }
        }
      });
      return {dx,           sums[0],      sums[1],      sums[2],
              at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
    const at::Tensor d_chunk = (-ds * s * s * factor / static_cast<double>(j)).contiguous();
    const float* dc = d_chunk.data_ptr<float>();
    at::parallel_for(0, b, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t n = begin; n < end; ++n) {
        for (std::int64_t node = 0; node < k; ++node) {
          float* slice = dxp + n * sample_stride + node * c;
          const std::int64_t item = n * k + node;
          for (std::int64_t gi = 0; gi < g; ++gi) {
            for (std::int64_t ji = 0; ji < j; ++ji) {
              const std::int64_t at = (item * g + gi) * j + ji;
              slice[arg_max.data_ptr<std::int32_t>()[at]] += dc[item * g + gi];
              slice[arg_min.data_ptr<std::int32_t>()[at]] -= dc[item * g + gi];
            }
          }
        }
      }
    });
    return {dx, sums[0], sums[1], sums[2], at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

namespace {

SliceRangeStatistic sized_statistic(std::int64_t pixels, std::int64_t pixel_stride,
                                    std::int64_t channels, std::int64_t groups,
                                    std::int64_t chunks) {
  LPDT_CHECK(channels % groups == 0 && (channels / groups * pixels) % chunks == 0 &&
                 pixel_stride >= channels,
             "slice_range_statistic: shape");
  SliceRangeStatistic r;
  r.scale.resize(static_cast<std::size_t>(groups));
  r.arg_max.resize(static_cast<std::size_t>(groups * chunks));
  r.arg_min.resize(r.arg_max.size());
  return r;
}

}  // namespace

SliceRangeStatistic slice_range_statistic(const float* x, std::int64_t pixels,
                                          std::int64_t pixel_stride, std::int64_t channels,
                                          std::int64_t groups, std::int64_t chunks, float factor,
                                          bool sequential) {
  SliceRangeStatistic r = sized_statistic(pixels, pixel_stride, channels, groups, chunks);
  const Slice s{pixels, pixel_stride, channels};
  if (sequential) {
    group_ranges_sequential(x, s, groups, chunks, factor, r.scale.data(), r.arg_max.data(),
                            r.arg_min.data());
  } else {
    group_ranges(x, s, groups, chunks, factor, r.scale.data(), r.arg_max.data(), r.arg_min.data());
  }
  return r;
}

SliceRangeStatistic slice_range_statistic_of_codes(const std::uint8_t* codes, float code_scale,
                                                   float code_zero_point, std::int64_t pixels,
                                                   std::int64_t pixel_stride, std::int64_t channels,
                                                   std::int64_t groups, std::int64_t chunks,
                                                   float factor) {
  SliceRangeStatistic r = sized_statistic(pixels, pixel_stride, channels, groups, chunks);
  group_ranges(codes, CodeValues{code_scale, code_zero_point},
               Slice{pixels, pixel_stride, channels}, groups, chunks, factor, r.scale.data(),
               r.arg_max.data(), r.arg_min.data());
  return r;
}

at::Tensor quantize_group_scales(const at::Tensor& s, std::int64_t k, int bits,
                                 quant::QuantScheme scheme) {
  // s: [b, k, G] -> each node's b x G scales share one range (reference spec 7.2).
  const at::Tensor node_leading = s.transpose(0, 1).contiguous();  // [k, b, G]
  quant::QuantizeRequest request;
  request.bits = bits;
  request.scheme = scheme;
  request.rounding = quant::Rounding::kNearest;
  return quant::fake_quantize(node_leading, k, quant::tensor_range(node_leading, k), request)
      .transpose(0, 1)
      .contiguous();
}

bool range_evonorm_fused_supports(const at::Tensor& x) {
  return x.dim() == 4 && x.scalar_type() == at::kFloat && x.device().is_cpu();
}

at::Tensor range_evonorm_fused(const at::Tensor& x, const quant::QuantizedTensor& x_codes,
                               const at::Tensor& qv, const at::Tensor& qgamma,
                               const at::Tensor& qbeta, const RangeEvoNormShape& shape) {
  RECORD_FUNCTION("lpdt::range_evonorm_forward", std::vector<c10::IValue>());
  LPDT_CHECK(range_evonorm_fused_supports(x), "range_evonorm_fused: x must be 4-D float32 CPU");
  const at::Tensor empty = at::empty({0}, x.options());
  const bool codes = x_codes.codes.defined();
  return RangeEvoNormFunction::apply(x, qv, qgamma, qbeta, codes ? x_codes.codes : empty,
                                     codes ? x_codes.scale : empty,
                                     codes ? x_codes.zero_point : empty, shape);
}

}  // namespace lpdt::nn
