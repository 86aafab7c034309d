#include "lpdt/quant/affine_quantizer.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"
#include "lpdt/quant/affine_quantizer_cuda.h"
#include "lpdt/quant/affine_quantizer_tensor_ops.h"

namespace lpdt::quant {
namespace {

// The reference clamps the step size away from 0 (an all-equal tensor).

// The min and max of a block of `rows` runs of `cols` contiguous floats, row_stride apart (one
// node's part of a sample: in a k-node channels-last tensor, a node's C channels of every pixel).
// One call per block, not per run: runs are as short as C = 16 floats.
struct BlockMinMax {
  // kLanes floats as a GCC vector, one register of the level (core/cpu_dispatch.h): with `omp
  // simd` min/max reductions, or plain lane arrays at -O3, GCC emits one scalar vminss per element
  // (measured: 19% of an integer-backend step); this form is vminps/vmaxps. `v < lo ? v : lo` is
  // the scalar std::min(lo, v) in every lane, so a NaN is skipped as before.
  template <int kLanes>
  [[gnu::always_inline]] static void run(const float* __restrict p, std::int64_t rows,
                                         std::int64_t cols, std::int64_t row_stride, float& lo_out,
                                         float& hi_out) {
    using Lanes = Simd<float, kLanes>;
    Lanes lo, hi;
    for (int j = 0; j < kLanes; ++j) {
      lo[j] = lo_out;
      hi[j] = hi_out;
    }
    float l = lo_out, h = hi_out;
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* __restrict run = p + r * row_stride;
      std::int64_t c = 0;
      for (; c + kLanes <= cols; c += kLanes) {
        Lanes v;
        std::memcpy(&v, run + c, sizeof v);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
      for (; c < cols; ++c) {
        l = run[c] < l ? run[c] : l;
        h = run[c] > h ? run[c] : h;
      }
    }
    for (int j = 0; j < kLanes; ++j) {
      l = lo[j] < l ? lo[j] : l;
      h = hi[j] > h ? hi[j] : h;
    }
    lo_out = l;
    hi_out = h;
  }
};

// The rows of one (node, sample) block as the loops below take them. Rows that lie back to back
// (one node in the tensor) are one long run: longer loops for the vectoriser. The element index
// r * cols + c is the same either way.
struct Block {
  std::int64_t rows, cols, row_stride;
};
Block block_of(const NodeView& v) {
  if (v.row_stride == v.cols) return {1, v.rows * v.cols, v.rows * v.cols};
  return {v.rows, v.cols, v.row_stride};
}

// Per (node, sample) min and max: [k * samples] pairs.
void sample_min_max(const at::Tensor& xc, const NodeView& v, std::vector<float>& mins,
                    std::vector<float>& maxs) {
  const float* x = xc.data_ptr<float>();
  const std::int64_t items = v.nodes * v.samples;
  mins.assign(items, std::numeric_limits<float>::infinity());
  maxs.assign(items, -std::numeric_limits<float>::infinity());
  at::parallel_for(0, items, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t item = begin; item < end; ++item) {
      const std::int64_t node = item / v.samples, sample = item % v.samples;
      float lo = std::numeric_limits<float>::infinity();
      float hi = -lo;
      const Block b = block_of(v);
      run_simd_kernel<BlockMinMax>(x + v.offset(node, sample, 0), b.rows, b.cols, b.row_stride, lo,
                                   hi);
      mins[item] = lo;
      maxs[item] = hi;
    }
  });
}

// One element's scaled value, before its draw (when stochastic) and rounding. Shared by every loop
// below, so the vector chunks and the scalar tails decide alike.
inline float scaled_value(float x, float scale, float zero_point, float min,
                          bool reference_scheme) {
  return reference_scheme ? (x - min) / scale : x / scale + zero_point;
}

// Runs body(r, c) over a block's rows and columns in chunks of kChunk columns with a fixed trip
// count, then the remaining columns one by one. In a k-node channels-last tensor a row is one
// pixel's C channels (16, 32 or 64 in ResNet-20): a plain `c < cols` loop that short is left
// scalar by GCC's vectoriser (its vector loop wants more iterations than one row has; measured:
// 13x slower per element in an 8-node pass), while a fixed 16 is exactly one AVX-512 vector.
constexpr std::int64_t kChunk = 16;
// Conversions between kLanes codes and kLanes floats, one register of the level
// (core/cpu_dispatch.h), through memory (a vector argument or result would tie these helpers to
// an ABI). Codes to floats widen byte -> 16-bit -> 32-bit: GCC 12 lowers a byte -> int
// __builtin_convertvector to scalar extractions, and a shuffle of 16 bytes into a 64-byte vector
// through the stack (a 64-byte load of a 16-byte store, which waits for it: docs/benchmarks.md,
// low precision item 26), while vpmovzxbw / vpmovzxwd stay in registers.
template <int kLanes>
[[gnu::always_inline]] inline void load_code_floats(const std::uint8_t* __restrict in,
                                                    Simd<float, kLanes>& out) {
  Simd<std::uint8_t, kLanes> codes;
  std::memcpy(&codes, in, sizeof codes);
  const auto wide = __builtin_convertvector(codes, Simd<std::uint16_t, kLanes>);
  out = __builtin_convertvector(__builtin_convertvector(wide, Simd<std::int32_t, kLanes>),
                                Simd<float, kLanes>);
}
// Floats holding the integers 0..255 to codes. AVX-512 narrows int32 to bytes in one vpmovdb;
// below it GCC extracts every lane, so the codes are picked as the low byte of each int32 lane
// (little-endian) by one byte shuffle (vpshufb and a lane permute on AVX2).
template <int kLanes>
[[gnu::always_inline]] inline void store_codes(const Simd<float, kLanes>& rounded,
                                               std::uint8_t* __restrict out) {
  using Ints = Simd<std::int32_t, kLanes>;
  using Codes = Simd<std::uint8_t, kLanes>;
  const Ints ints = __builtin_convertvector(rounded, Ints);
  Codes codes;
  if constexpr (kLanes == kSimdFloatLanes<SimdLevel::kAvx512> ||
                std::endian::native != std::endian::little) {
    codes = __builtin_convertvector(ints, Codes);
  } else if constexpr (kLanes == 8) {
    using Bytes = Simd<std::uint8_t, 4 * kLanes>;
    const Bytes bytes = reinterpret_cast<Bytes>(ints);
    codes = __builtin_shufflevector(bytes, bytes, 0, 4, 8, 12, 16, 20, 24, 28);
  } else {
    static_assert(kLanes == 4, "lanes of a level");
    using Bytes = Simd<std::uint8_t, 4 * kLanes>;
    const Bytes bytes = reinterpret_cast<Bytes>(ints);
    codes = __builtin_shufflevector(bytes, bytes, 0, 4, 8, 12);
  }
  std::memcpy(out, &codes, sizeof codes);
}
// Rows at least this long (a node alone in its pass: the whole block is one run) take plain
// loops, which GCC vectorises with wider steps and its own remainders: measured 25% faster there
// than the chunks.
constexpr std::int64_t kLongRun = 256;

template <typename Body>
inline __attribute__((always_inline)) void for_each_in_block(std::int64_t rows, std::int64_t cols,
                                                             Body&& body) {
  if (cols >= kLongRun) {
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) body(r, c);
    }
    return;
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t c = 0;
    for (; c + kChunk <= cols; c += kChunk) {
#pragma omp simd
      for (std::int64_t j = 0; j < kChunk; ++j) body(r, c + j);
    }
    for (; c < cols; ++c) body(r, c);
  }
}

// Runs body(r, c, draw) over a block's elements as for_each_in_block does, with draw the element's
// centered_uniform(stream, index0 + r * cols + c). The draws come a window of up to
// kMaxDrawsAtOnce consecutive elements at a time from centered_uniforms (one hash per two draws,
// vectorised): a run of a long row, or as many whole short rows as fit, whose node-local indices
// follow on from each other.
template <typename Body>
inline __attribute__((always_inline)) void for_each_with_draws(std::int64_t rows, std::int64_t cols,
                                                               std::uint64_t stream,
                                                               std::uint64_t index0, Body&& body) {
  alignas(64) float draws[kMaxDrawsAtOnce];
  const auto index = [&](std::int64_t r, std::int64_t c) {
    return index0 + static_cast<std::uint64_t>(r * cols + c);
  };
  if (cols >= kLongRun) {
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c0 = 0; c0 < cols; c0 += kMaxDrawsAtOnce) {
        const std::int64_t n = std::min(kMaxDrawsAtOnce, cols - c0);
        centered_uniforms(stream, index(r, c0), n, draws);
        for (std::int64_t j = 0; j < n; ++j) body(r, c0 + j, draws[j]);
      }
    }
    return;
  }
  const std::int64_t window_rows = std::max<std::int64_t>(1, kMaxDrawsAtOnce / cols);
  for (std::int64_t r0 = 0; r0 < rows; r0 += window_rows) {
    const std::int64_t r_end = std::min(rows, r0 + window_rows);
    centered_uniforms(stream, index(r0, 0), (r_end - r0) * cols, draws);
    for (std::int64_t r = r0; r < r_end; ++r) {
      const float* __restrict row_draws = draws + (r - r0) * cols;
      std::int64_t c = 0;
      for (; c + kChunk <= cols; c += kChunk) {
#pragma omp simd
        for (std::int64_t j = 0; j < kChunk; ++j) body(r, c + j, row_draws[c + j]);
      }
      for (; c < cols; ++c) body(r, c, row_draws[c]);
    }
  }
}

// Quantizes a block of `rows` runs of `cols` contiguous elements, row_stride apart, whose
// node-local indices start at index0 and run on row by row (index0 + r * cols + c), and writes the
// dequantized values (simulated backend). The reference clamps after adding the noise, then
// rounds half to even (torch.round). Loops without calls: they vectorise (cpu_dispatch.h).
LPDT_CPU_CLONES void fake_quantize_block(const float* __restrict x, float* __restrict out,
                                         std::int64_t rows, std::int64_t cols,
                                         std::int64_t row_stride, float scale, float zero_point,
                                         float min, bool reference_scheme, float qmax,
                                         bool stochastic, std::uint64_t stream,
                                         std::uint64_t index0) {
  const auto write = [&](std::int64_t at, float y) {
    const float q = round_half_even(std::min(std::max(y, 0.0f), qmax));
    out[at] = reference_scheme ? q * scale + min : (q - zero_point) * scale;
  };
  const auto scaled = [&](std::int64_t at) {
    return scaled_value(x[at], scale, zero_point, min, reference_scheme);
  };
  if (stochastic) {
    return for_each_with_draws(rows, cols, stream, index0,
                               [&](std::int64_t r, std::int64_t c, float draw) {
                                 const std::int64_t at = r * row_stride + c;
                                 write(at, scaled(at) + draw);
                               });
  }
  for_each_in_block(rows, cols, [&](std::int64_t r, std::int64_t c) {
    const std::int64_t at = r * row_stride + c;
    write(at, scaled(at));
  });
}

// The same decisions, writing 8-bit codes (integer backend; gemmlowp scheme only). A chunk's
// rounded values are staged as floats first: with the 8-bit store in the same loop GCC sizes every
// vector by the 16 bytes of codes (xmm registers, 4 floats and 2 hashes each); staged, the floats
// and hashes fill AVX-512 registers.
struct QuantizeCodesBlock {
  template <int kLanes>
  [[gnu::always_inline]] static void run(const float* __restrict x, std::uint8_t* __restrict out,
                                         std::int64_t rows, std::int64_t cols,
                                         std::int64_t row_stride, float scale, float zero_point,
                                         float qmax, bool stochastic, std::uint64_t stream,
                                         std::uint64_t index0) {
    // std::max(0.0f, y) returns 0 for a NaN y, where std::max(y, 0.0f) would return the NaN and
    // its conversion to uint8_t would be undefined: a NaN input is code 0 (the run's parameter
    // check stops a run whose parameters are NaN at the epoch's end).
    const auto code = [&](std::int64_t r, std::int64_t c, float draw) {
      const float y = scaled_value(x[r * row_stride + c], scale, zero_point, 0.0f,
                                   /*reference_scheme=*/false) +
                      draw;
      return round_half_even(std::min(std::max(0.0f, y), qmax));
    };
    if (cols >= kLongRun) {
      const auto store = [&](std::int64_t r, std::int64_t c, float draw) {
        out[r * row_stride + c] = static_cast<std::uint8_t>(code(r, c, draw));
      };
      if (stochastic) return for_each_with_draws(rows, cols, stream, index0, store);
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t c = 0; c < cols; ++c) {
          const float y = scaled_value(x[r * row_stride + c], scale, zero_point, 0.0f,
                                       /*reference_scheme=*/false);
          out[r * row_stride + c] =
              static_cast<std::uint8_t>(round_half_even(std::min(std::max(0.0f, y), qmax)));
        }
      }
      return;
    }
    // Short rows: each chunk of 16 staged as floats, then stored as 16 codes at once.
    alignas(64) float draws[kMaxDrawsAtOnce] = {};
    const std::int64_t window_rows = std::max<std::int64_t>(1, kMaxDrawsAtOnce / cols);
    for (std::int64_t r0 = 0; r0 < rows; r0 += window_rows) {
      const std::int64_t r_end = std::min(rows, r0 + window_rows);
      if (stochastic) {
        centered_uniforms(stream, index0 + static_cast<std::uint64_t>(r0 * cols),
                          (r_end - r0) * cols, draws);
      }
      for (std::int64_t r = r0; r < r_end; ++r) {
        const float* __restrict row_draws = draws + (stochastic ? (r - r0) * cols : 0);
        std::uint8_t* __restrict o = out + r * row_stride;
        std::int64_t c = 0;
        for (; c + kChunk <= cols; c += kChunk) {
          float staged[kChunk];
#pragma omp simd
          for (std::int64_t j = 0; j < kChunk; ++j) staged[j] = code(r, c + j, row_draws[c + j]);
          for (std::int64_t j = 0; j < kChunk; j += kLanes) {
            Simd<float, kLanes> rounded;
            std::memcpy(&rounded, staged + j, sizeof rounded);
            store_codes<kLanes>(rounded, o + c + j);
          }
        }
        for (; c < cols; ++c) o[c] = static_cast<std::uint8_t>(code(r, c, row_draws[c]));
      }
    }
  }
};

void quantize_block(const float* x, float* out, const NodeView& v, const AffineParams& p,
                    float qmax, bool stochastic, std::uint64_t stream, std::uint64_t index0) {
  const Block b = block_of(v);
  fake_quantize_block(x, out, b.rows, b.cols, b.row_stride, p.scale, p.zero_point, p.min,
                      p.scheme == QuantScheme::kReference, qmax, stochastic, stream, index0);
}
void quantize_block(const float* x, std::uint8_t* out, const NodeView& v, const AffineParams& p,
                    float qmax, bool stochastic, std::uint64_t stream, std::uint64_t index0) {
  const Block b = block_of(v);
  run_simd_kernel<QuantizeCodesBlock>(x, out, b.rows, b.cols, b.row_stride, p.scale, p.zero_point,
                                      qmax, stochastic, stream, index0);
}

// Codes back to real values, (q - z) * s, for one block (as above).
struct DequantizeBlock {
  template <int kLanes>
  [[gnu::always_inline]] static void run(const std::uint8_t* __restrict codes,
                                         float* __restrict out, std::int64_t rows,
                                         std::int64_t cols, std::int64_t row_stride, float scale,
                                         float zero_point) {
    if (cols >= kLongRun) {
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t c = 0; c < cols; ++c) {
          const std::int64_t at = r * row_stride + c;
          out[at] = (static_cast<float>(codes[at]) - zero_point) * scale;
        }
      }
      return;
    }
    // GCC vectors for the chunks: as a loop, the kLanes bytes of codes size every vector to xmm.
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::uint8_t* __restrict in = codes + r * row_stride;
      float* __restrict o = out + r * row_stride;
      std::int64_t c = 0;
      for (; c + kLanes <= cols; c += kLanes) {
        Simd<float, kLanes> values;
        load_code_floats<kLanes>(in + c, values);
        values = (values - zero_point) * scale;
        std::memcpy(o + c, &values, sizeof values);
      }
      for (; c < cols; ++c) o[c] = (static_cast<float>(in[c]) - zero_point) * scale;
    }
  }
};

// Each node's stream of stochastic-rounding draws (zeros when rounding to nearest).
std::vector<std::uint64_t> node_streams(const QuantizeRequest& request, std::int64_t nodes) {
  std::vector<std::uint64_t> streams(static_cast<std::size_t>(nodes), 0);
  if (request.rounding == Rounding::kStochastic) {
    LPDT_CHECK(request.key.device_step == nullptr,
               "stochastic rounding on the CPU: DrawKey::device_step is for CUDA kernels only");
    for (std::int64_t i = 0; i < nodes; ++i) streams[i] = draw_stream(request.key, i, request.site);
  }
  return streams;
}

float max_code(const QuantizeRequest& request) {
  return static_cast<float>((std::int64_t{1} << request.bits) - 1);
}

template <typename Out>
void quantize_all(const at::Tensor& xc, Out* out, const NodeView& v,
                  const std::vector<AffineParams>& params, const QuantizeRequest& request) {
  const float* x = xc.data_ptr<float>();
  const float qmax = max_code(request);
  const bool stochastic = request.rounding == Rounding::kStochastic;
  const std::vector<std::uint64_t> streams = node_streams(request, v.nodes);
  const std::int64_t items = v.nodes * v.samples;
  at::parallel_for(0, items, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t item = begin; item < end; ++item) {
      const std::int64_t node = item / v.samples, sample = item % v.samples;
      const std::int64_t offset = v.offset(node, sample, 0);
      const auto index0 = static_cast<std::uint64_t>(sample * v.rows * v.cols);
      quantize_block(x + offset, out + offset, v, params[node], qmax, stochastic, streams[node],
                     index0);
    }
  });
}

std::vector<AffineParams> node_params(const NodeRange& range, std::int64_t k, int bits,
                                      QuantScheme scheme) {
  LPDT_CHECK(range.min.numel() == k && range.max.numel() == k, "quantize: range is not [k]");
  const at::Tensor lo = range.min.to(at::kFloat).contiguous(),
                   hi = range.max.to(at::kFloat).contiguous();
  std::vector<AffineParams> params(k);
  for (std::int64_t i = 0; i < k; ++i) {
    params[i] = affine_params(lo.data_ptr<float>()[i], hi.data_ptr<float>()[i], bits, scheme);
  }
  return params;
}

void check_input(const at::Tensor& x, const QuantizeRequest& request) {
  LPDT_CHECK(x.scalar_type() == at::kFloat && x.device().is_cpu(),
             "quantize: expected a float32 CPU tensor");
  LPDT_CHECK(request.bits >= 2 && request.bits <= 16, "quantize: bits must be in [2, 16]");
}

}  // namespace

namespace {

// Each node's range from its samples' extremes (CPU): combine(mins, maxs, samples) -> {lo, hi}
// over one node's per-sample minima and maxima.
template <typename Combine>
NodeRange range_from_sample_extremes(const at::Tensor& x, std::int64_t k, Combine combine) {
  const at::Tensor xc = canonical_layout(x);
  const NodeView v = node_view(xc, k);
  std::vector<float> mins, maxs;
  sample_min_max(xc, v, mins, maxs);
  NodeRange range{at::empty({k}, at::kFloat), at::empty({k}, at::kFloat)};
  for (std::int64_t i = 0; i < k; ++i) {
    const auto [lo, hi] = combine(&mins[i * v.samples], &maxs[i * v.samples], v.samples);
    range.min.data_ptr<float>()[i] = lo;
    range.max.data_ptr<float>()[i] = hi;
  }
  return range;
}

}  // namespace

NodeRange tensor_range(const at::Tensor& x, std::int64_t k) {
  RECORD_FUNCTION("lpdt::tensor_range", std::vector<c10::IValue>());
  if (!x.device().is_cpu()) {
    return cuda::handles(x) ? cuda::tensor_range(x, k) : tensor_ops::tensor_range(x, k);
  }
  // The extremes over the node's samples.
  return range_from_sample_extremes(x, k, [](const float* mins, const float* maxs,
                                             std::int64_t samples) {
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    for (std::int64_t s = 0; s < samples; ++s) {
      lo = std::min(lo, mins[s]);
      hi = std::max(hi, maxs[s]);
    }
    return std::pair{lo, hi};
  });
}

NodeRange sample_mean_range(const at::Tensor& x, std::int64_t k) {
  RECORD_FUNCTION("lpdt::sample_mean_range", std::vector<c10::IValue>());
  if (!x.device().is_cpu()) {
    return cuda::handles(x) ? cuda::sample_mean_range(x, k) : tensor_ops::sample_mean_range(x, k);
  }
  // The means of the node's samples' extremes, summed in double.
  return range_from_sample_extremes(x, k, [](const float* mins, const float* maxs,
                                             std::int64_t samples) {
    double lo = 0.0, hi = 0.0;
    for (std::int64_t s = 0; s < samples; ++s) {
      lo += mins[s];
      hi += maxs[s];
    }
    return std::pair{static_cast<float>(lo / static_cast<double>(samples)),
                     static_cast<float>(hi / static_cast<double>(samples))};
  });
}

std::vector<at::Tensor> fake_quantize_each_nearest(const std::vector<at::Tensor>& tensors,
                                                   std::int64_t k, int bits, QuantScheme scheme) {
  RECORD_FUNCTION("lpdt::fake_quantize_each_nearest", std::vector<c10::IValue>());
  bool all_cuda = !tensors.empty();
  for (const at::Tensor& t : tensors) {
    LPDT_CHECK(t.scalar_type() == at::kFloat && t.dim() >= 1 && t.size(0) == k &&
                   t.is_non_overlapping_and_dense() &&
                   (t.numel() == 0 || t.stride(0) * k == t.numel()),
               "fake_quantize_each_nearest: expected [k, ...] float32 tensors whose nodes' values "
               "are dense blocks");
    all_cuda = all_cuda && cuda::handles(t);
  }
  if (all_cuda) return cuda::fake_quantize_each_nearest(tensors, k, bits, scheme);
  QuantizeRequest request;
  request.bits = bits;
  request.scheme = scheme;
  request.rounding = Rounding::kNearest;
  std::vector<at::Tensor> out;
  out.reserve(tensors.size());
  for (const at::Tensor& t : tensors) {
    out.push_back(at::empty_like(t));
    if (t.numel() == 0) continue;
    const at::Tensor flat = t.reshape({k, -1});
    out.back().copy_(fake_quantize(flat, k, tensor_range(flat, k), request).view(t.sizes()));
  }
  return out;
}

NodeRange sample_mean_range_updating(const at::Tensor& x, std::int64_t k,
                                     const at::Tensor& running_min, const at::Tensor& running_max,
                                     double momentum) {
  if (cuda::handles(x))
    return cuda::sample_mean_range_updating(x, k, running_min, running_max, momentum);
  NodeRange range = sample_mean_range(x, k);
  at::Tensor lo = running_min, hi = running_max;  // handles to the same storage
  lo.mul_(1.0 - momentum).add_(range.min.view(lo.sizes()), momentum);
  hi.mul_(1.0 - momentum).add_(range.max.view(hi.sizes()), momentum);
  return range;
}

at::Tensor fake_quantize(const at::Tensor& x, std::int64_t k, const NodeRange& range,
                         const QuantizeRequest& request) {
  RECORD_FUNCTION("lpdt::fake_quantize", std::vector<c10::IValue>());
  if (!x.device().is_cpu()) {
    return cuda::handles(x) ? cuda::fake_quantize(x, k, range, request)
                            : tensor_ops::fake_quantize(x, k, range, request);
  }
  check_input(x, request);
  const at::Tensor xc = canonical_layout(x);
  const NodeView v = node_view(xc, k);
  at::Tensor out = at::empty_like(xc);
  quantize_all(xc, out.data_ptr<float>(), v, node_params(range, k, request.bits, request.scheme),
               request);
  return out;
}

QuantizedTensor quantize(const at::Tensor& x, std::int64_t k, const NodeRange& range,
                         const QuantizeRequest& request) {
  RECORD_FUNCTION("lpdt::quantize", std::vector<c10::IValue>());
  if (!x.device().is_cpu()) {
    return cuda::handles(x) ? cuda::quantize(x, k, range, request)
                            : tensor_ops::quantize(x, k, range, request);
  }
  check_input(x, request);
  LPDT_CHECK(request.bits <= 8, "quantize: codes are 8-bit (bits <= 8)");
  LPDT_CHECK(request.scheme == QuantScheme::kGemmlowp,
             "quantize: integer codes need the gemmlowp scheme (an integer zero point)");
  const at::Tensor xc = canonical_layout(x);
  const NodeView v = node_view(xc, k);
  const std::vector<AffineParams> params = node_params(range, k, request.bits, request.scheme);
  QuantizedTensor q;
  q.codes = at::empty_like(xc, xc.options().dtype(at::kByte));
  quantize_all(xc, q.codes.data_ptr<std::uint8_t>(), v, params, request);
  q.scale = at::empty({k}, at::kFloat);
  q.zero_point = at::empty({k}, at::kFloat);
  for (std::int64_t i = 0; i < k; ++i) {
    q.scale.data_ptr<float>()[i] = params[i].scale;
    q.zero_point.data_ptr<float>()[i] = params[i].zero_point;
  }
  return q;
}

SampleQuantizer::SampleQuantizer(const NodeView& v, const NodeRange& range,
                                 const QuantizeRequest& request)
    : view_(v),
      params_(node_params(range, v.nodes, request.bits, request.scheme)),
      streams_(node_streams(request, v.nodes)),
      qmax_(max_code(request)),
      stochastic_(request.rounding == Rounding::kStochastic) {
  LPDT_CHECK(request.bits >= 2 && request.bits <= 16, "SampleQuantizer: bits must be in [2, 16]");
}

void SampleQuantizer::fake_quantize_sample(const float* x, float* out, std::int64_t sample) const {
  const auto index0 = static_cast<std::uint64_t>(sample * view_.rows * view_.cols);
  for (std::int64_t node = 0; node < view_.nodes; ++node) {
    const std::int64_t offset = view_.offset(node, 0, 0);
    quantize_block(x + offset, out + offset, view_, params_[node], qmax_, stochastic_,
                   streams_[node], index0);
  }
}

void dequantize_sample(const QuantizedTensor& q, const NodeView& v, std::int64_t sample,
                       float* out) {
  const std::uint8_t* codes = q.codes.data_ptr<std::uint8_t>() + v.offset(0, sample, 0);
  const Block b = block_of(v);
  for (std::int64_t node = 0; node < v.nodes; ++node) {
    const std::int64_t offset = v.offset(node, 0, 0);
    run_simd_kernel<DequantizeBlock>(codes + offset, out + offset, b.rows, b.cols, b.row_stride,
                                     q.scale.data_ptr<float>()[node],
                                     q.zero_point.data_ptr<float>()[node]);
  }
}

at::Tensor dequantize(const QuantizedTensor& q, std::int64_t k) {
  RECORD_FUNCTION("lpdt::dequantize", std::vector<c10::IValue>());
  if (!q.codes.device().is_cpu()) {
    return cuda::handles(q.codes) ? cuda::dequantize(q, k) : tensor_ops::dequantize(q, k);
  }
  const NodeView v = node_view(q.codes, k);
  at::Tensor out = at::empty_like(q.codes, q.codes.options().dtype(at::kFloat));
  const std::uint8_t* codes = q.codes.data_ptr<std::uint8_t>();
  float* o = out.data_ptr<float>();
  const float* scales = q.scale.data_ptr<float>();
  const float* zero_points = q.zero_point.data_ptr<float>();
  const Block b = block_of(v);
  at::parallel_for(0, k * v.samples, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t item = begin; item < end; ++item) {
      const std::int64_t node = item / v.samples, sample = item % v.samples;
      const std::int64_t offset = v.offset(node, sample, 0);
      run_simd_kernel<DequantizeBlock>(codes + offset, o + offset, b.rows, b.cols, b.row_stride,
                                       scales[node], zero_points[node]);
    }
  });
  return out;
}

}  // namespace lpdt::quant
