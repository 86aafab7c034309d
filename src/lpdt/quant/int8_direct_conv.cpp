#include "lpdt/quant/int8_direct_conv.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"
#include "lpdt/quant/int8_gemm.h"

#if LPDT_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace lpdt::quant {

bool int8_direct_conv_available() { return have_int8_gemm() && int8_gemm_is_exact_in_onednn(); }

namespace {

// sum_c q_x[q, c] of one pixel's C codes. SSE2's psadbw adds 16 bytes into two 64-bit lanes in one
// instruction (SSE2 is in every x86-64 target); elsewhere, and for the last C mod 16, plain adds.
inline std::int32_t pixel_code_sum(const std::uint8_t* codes, std::int64_t c) {
  std::int32_t s = 0;
  std::int64_t ch = 0;
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  __m128i lanes = zero;
  for (; ch + 16 <= c; ch += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + ch));
    lanes = _mm_add_epi64(lanes, _mm_sad_epu8(v, zero));
  }
  s = _mm_cvtsi128_si32(lanes) + _mm_cvtsi128_si32(_mm_srli_si128(lanes, 8));
#endif
  for (; ch < c; ++ch) s += codes[ch];
  return s;
}

// The output positions o in [0, outputs) whose tap t reads an input inside [0, size):
// 0 <= o * stride - padding + t < size.
struct TapRange {
  std::int64_t first, last;
};
TapRange outputs_reading_inside(std::int64_t t, std::int64_t size, std::int64_t outputs,
                                const ConvGeometry& g) {
  const std::int64_t below = g.padding - t;  // o * stride >= below
  const std::int64_t first = below <= 0 ? 0 : (below + g.stride - 1) / g.stride;
  const std::int64_t above = size + g.padding - t;  // o * stride < above
  const std::int64_t last = above <= 0 ? 0 : std::min(outputs, (above + g.stride - 1) / g.stride);
  return {first, std::max(first, last)};
}

// One sample's window sums (window_sums' header formula): pixel sums, then the sums across each
// row's taps, then down the rows' taps. Each tap is one pass over a row's outputs with the taps
// that fall outside the image left out of its range, so the inner loops have no branches and
// vectorise (a per-output tap range left them scalar: 3% of an integer-backend step).
LPDT_CPU_CLONES void sample_window_sums(const std::uint8_t* __restrict sample,
                                        std::int64_t pixel_stride, std::int32_t channel_zero,
                                        const ConvGeometry& g, std::int32_t* __restrict pixel,
                                        std::int32_t* __restrict across,
                                        std::int32_t* __restrict out) {
  const std::int64_t h = g.height, w = g.width, ho = g.out_height(), wo = g.out_width();
  for (std::int64_t q = 0; q < h * w; ++q) {
    pixel[q] = pixel_code_sum(sample + q * pixel_stride, g.in_channels) - channel_zero;
  }
  for (std::int64_t i = 0; i < h * wo; ++i) across[i] = 0;
  for (std::int64_t kx = 0; kx < g.kernel; ++kx) {
    const TapRange r = outputs_reading_inside(kx, w, wo, g);
    for (std::int64_t y = 0; y < h; ++y) {
      const std::int32_t* __restrict in = pixel + y * w - g.padding + kx;
      std::int32_t* __restrict row = across + y * wo;
      for (std::int64_t ox = r.first; ox < r.last; ++ox) row[ox] += in[ox * g.stride];
    }
  }
  for (std::int64_t i = 0; i < ho * wo; ++i) out[i] = 0;
  for (std::int64_t ky = 0; ky < g.kernel; ++ky) {
    const TapRange r = outputs_reading_inside(ky, h, ho, g);
    for (std::int64_t oy = r.first; oy < r.last; ++oy) {
      const std::int32_t* __restrict from = across + (oy * g.stride - g.padding + ky) * wo;
      std::int32_t* __restrict row = out + oy * wo;
      for (std::int64_t ox = 0; ox < wo; ++ox) row[ox] += from[ox];
    }
  }
}

}  // namespace

void window_sums(const std::uint8_t* x, std::int64_t pixel_stride, std::uint8_t x_zero,
                 const ConvGeometry& g, std::int32_t* sums) {
  const std::int64_t h = g.height, w = g.width, positions = g.out_height() * g.out_width();
  const std::int32_t channel_zero = static_cast<std::int32_t>(g.in_channels) * x_zero;
  at::parallel_for(0, g.batch, 1, [&](std::int64_t begin, std::int64_t end) {
    std::vector<std::int32_t> pixel(static_cast<std::size_t>(h * w));
    std::vector<std::int32_t> across(static_cast<std::size_t>(h * g.out_width()));
    for (std::int64_t b = begin; b < end; ++b) {
      sample_window_sums(x + b * h * w * pixel_stride, pixel_stride, channel_zero, g, pixel.data(),
                         across.data(), sums + b * positions);
    }
  });
}

#if LPDT_HAVE_DNNL
namespace {

using Tag = dnnl::memory::format_tag;
using DataType = dnnl::memory::data_type;

// A primitive for one geometry, made once: oneDNN generates its code when it is created.
struct DirectConv {
  dnnl::convolution_forward conv;
  dnnl::reorder weight_reorder;  // plain [Cout, Cin, kh, kw] int8 -> the primitive's layout
  dnnl::memory::desc src, dst, plain_weight, weight, scratchpad;
  std::string impl;  // oneDNN's name of the implementation taken
};

// The geometry and the thread count the primitive was made for (passes on worker threads run at
// one thread: core/pass_workers.h); oneDNN splits a primitive's work for its thread count.
using GeometryKey = std::array<std::int64_t, 9>;

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// A buffer of `bytes` between two guard bands of known bytes, to see whether a kernel wrote
// outside its buffer: past its end, or before its start.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(std::size_t bytes)
      : bytes_(bytes), guard_(guard_bytes(bytes)), data_(bytes + 2 * guard_, kGuardByte) {}
  void* data() { return data_.data() + guard_; }
  bool guards_intact() const {
    const auto intact = [](std::uint8_t b) { return b == kGuardByte; };
    const auto end = data_.begin() + static_cast<std::ptrdiff_t>(guard_ + bytes_);
    return std::all_of(data_.begin(), data_.begin() + static_cast<std::ptrdiff_t>(guard_), intact) &&
           std::all_of(end, data_.end(), intact);
  }

 private:
  static constexpr std::uint8_t kGuardByte = 0xA5;
  // As long as the buffer and at least 64 KiB, rounded to 64 bytes so that the buffer keeps the
  // vector's alignment: past any block a kernel rounds its work up to.
  static std::size_t guard_bytes(std::size_t bytes) {
    return (std::max<std::size_t>(bytes, 1 << 16) + 63) / 64 * 64;
  }
  std::size_t bytes_, guard_;
  std::vector<std::uint8_t> data_;
};

// One candidate timed at a time in the process. Passes on worker threads (core/pass_workers.h)
// meet their first convolutions together, so their threads would time candidates side by side:
// each then measured the other's load as much as the kernel, and, on a 2-core AMD EPYC (Zen 5),
// about 1 run in 10 of an 8-bit MobileNetV2 on 2 nodes beside another process saw a candidate
// write outside the buffers it was given (AddressSanitizer caught oneDNN writing into a heap
// redzone; in a normal build the heap was corrupted: "double free or corruption"). Alone, no
// candidate of any of that model's 49 geometries wrote outside its buffers, at 1 or 2 threads.
std::mutex& timing_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Median-free "best of a few" time of one execution of `pd`'s primitive on scratch buffers, in
// milliseconds; infinity for a primitive that writes outside its source, weights, destination or
// scratch buffer on any run. Integer convolutions take the same time whatever the codes, so
// zeros do.
// Why the check: oneDNN 2.6's jit_1x1:avx512_core_amx_int8 writes 12 pixels past the end of its
// destination for 1x1 convolutions of 64 input channels on 6x6 images (seen on a Sapphire Rapids
// Xeon: ResNet-20's last shortcut's input gradient on 12x12 inputs), which corrupted the heap.
// Such a candidate is never taken. The writes depend on the geometry and thread count only, both
// fixed per primitive (direct_conv_for's key).
double time_candidate(const dnnl::convolution_forward::primitive_desc& pd,
                      const dnnl::memory::desc& src, const dnnl::memory::desc& dst) {
  const std::lock_guard<std::mutex> one_at_a_time(timing_mutex());
  const dnnl::engine& engine = cpu_engine();
  GuardedBuffer src_buffer(src.get_size()), dst_buffer(dst.get_size());
  GuardedBuffer weight_buffer(pd.weights_desc().get_size());
  GuardedBuffer scratch_buffer(pd.scratchpad_desc().get_size());
  dnnl::memory src_memory(src, engine, src_buffer.data());
  dnnl::memory dst_memory(dst, engine, dst_buffer.data());
  dnnl::memory weight_memory(pd.weights_desc(), engine, weight_buffer.data());
  dnnl::memory scratch_memory(pd.scratchpad_desc(), engine, scratch_buffer.data());
  std::int32_t zero = 0;
  dnnl::memory zero_memory(dnnl::memory::desc({1}, DataType::s32, Tag::x), engine, &zero);
  std::memset(src_memory.get_data_handle(), 0, src.get_size());
  std::memset(weight_memory.get_data_handle(), 0, pd.weights_desc().get_size());
  const dnnl::convolution_forward conv(pd);
  dnnl::stream stream(engine);
  double best = std::numeric_limits<double>::infinity();
  for (int run = 0; run < 4; ++run) {  // the first run pages the buffers in
    const auto start = std::chrono::steady_clock::now();
    conv.execute(stream, {{DNNL_ARG_SRC, src_memory},
                          {DNNL_ARG_WEIGHTS, weight_memory},
                          {DNNL_ARG_DST, dst_memory},
                          {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zero_memory},
                          {DNNL_ARG_SCRATCHPAD, scratch_memory}});
    stream.wait();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!(dst_buffer.guards_intact() && scratch_buffer.guards_intact() &&
          src_buffer.guards_intact() && weight_buffer.guards_intact())) {
      return std::numeric_limits<double>::infinity();
    }
    if (run > 0) best = std::min(best, ms);
  }
  return best;
}

std::shared_ptr<const DirectConv> make_direct_conv(const ConvGeometry& g) {
  using dims = dnnl::memory::dims;
  auto made = std::make_shared<DirectConv>();
  made->src =
      dnnl::memory::desc(dims{g.batch, g.in_channels, g.height, g.width}, DataType::u8, Tag::nhwc);
  made->dst = dnnl::memory::desc(dims{g.batch, g.out_channels, g.out_height(), g.out_width()},
                                 DataType::s32, Tag::nhwc);
  made->plain_weight = dnnl::memory::desc(dims{g.out_channels, g.in_channels, g.kernel, g.kernel},
                                          DataType::s8, Tag::oihw);
  const dnnl::memory::desc any_weight(dims{g.out_channels, g.in_channels, g.kernel, g.kernel},
                                      DataType::s8, Tag::any);
  const dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, made->src,
      any_weight, made->dst, dims{g.stride, g.stride}, dims{g.padding, g.padding},
      dims{g.padding, g.padding});
  dnnl::primitive_attr attr;
  // The source zero point is given at each call (DNNL_RUNTIME_S32_VAL), one for the tensor.
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  // Scratch memory from the caller, so that threads running nodes side by side never share it.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  // oneDNN offers its implementations best-first by its own heuristics, and on a Zen 5 CPU they
  // are wrong for ResNet's 16-channel 32x32 layers: its brgemm kernel took 0.31 ms per call where
  // the direct jit_int8 one takes 0.17 ms for the same products at 32 channels
  // (docs/benchmarks.md, low precision item 21). Every implementation computes the same exact
  // int32 sums, so the fastest one, timed here once per geometry, is taken.
  dnnl::convolution_forward::primitive_desc pd(desc, attr, cpu_engine());
  int best = -1, reference = -1, index = 0;
  double best_ms = std::numeric_limits<double>::infinity();
  // Only the AVX-512 kernels are timed: this path runs on AVX-512 VNNI CPUs only
  // (int8_direct_conv_available), where the SSE4.1 and AVX2 kernels and the im2col + GEMM one were
  // never the fastest (none of an 8-bit MobileNetV2's 49 geometries on a Zen 5 took one); they are
  // 5 of the 8 candidates of a 1x1 convolution and 3 of the 4 of a 3x3 one.
  do {
    const std::string impl = pd.impl_info_str();
    if (impl.rfind("ref", 0) != 0 && impl.find("avx512") != std::string::npos) {
      const double ms = time_candidate(pd, made->src, made->dst);
      if (ms < best_ms) best_ms = ms, best = index;
    } else if (impl.rfind("ref", 0) == 0 && reference < 0) {  // oneDNN's reference loops
      reference = index;
    }
    ++index;
  } while (pd.next_impl());
  // Every fast implementation refused (time_candidate): oneDNN's reference loops, slow but right.
  if (best < 0) best = reference;
  LPDT_CHECK(best >= 0, "int8 direct convolution: oneDNN offers no usable implementation");
  pd = dnnl::convolution_forward::primitive_desc(desc, attr, cpu_engine());
  for (int i = 0; i < best; ++i) pd.next_impl();
  made->impl = pd.impl_info_str();
  made->weight = pd.weights_desc();
  made->scratchpad = pd.scratchpad_desc();
  made->conv = dnnl::convolution_forward(pd);
  made->weight_reorder = dnnl::reorder(
      dnnl::reorder::primitive_desc(cpu_engine(), made->plain_weight, cpu_engine(), made->weight));
  return made;
}

// Primitives per thread: one primitive run by two threads at once (passes side by side,
// core/pass_workers.h) computed wrong sums now and then (3 of 20 runs of the test
// ComputeGradients.PassesOnWorkersEqualPassesInTurnOnOneThread; none in 60 with a primitive per
// thread), though each call has its own scratchpad, zero point and weights.
std::shared_ptr<const DirectConv> direct_conv_for(const ConvGeometry& g) {
  thread_local std::map<GeometryKey, std::shared_ptr<const DirectConv>> made;
  const GeometryKey key{g.batch,  g.in_channels, g.out_channels,
                        g.height, g.width,       g.kernel,
                        g.stride, g.padding,     at::get_num_threads()};
  auto found = made.find(key);
  if (found == made.end()) found = made.emplace(key, make_direct_conv(g)).first;
  return found->second;
}

}  // namespace
#endif

void int8_direct_conv_s32(const std::uint8_t* x, std::int64_t pixel_stride, std::uint8_t x_zero,
                          const std::int8_t* weight, std::int8_t weight_zero, const ConvGeometry& g,
                          std::int32_t* acc, std::int32_t* deferred_sums) {
  LPDT_CHECK(g.groups == 1 && pixel_stride >= g.in_channels, "int8_direct_conv_s32: geometry");
  if (!int8_direct_conv_available()) {
    throw ConfigError(
        "the int8 direct convolution needs oneDNN and a CPU with AVX-512 VNNI; this machine "
        "runs the integer backend's im2col + GEMM path instead (int8_conv.h)");
  }
#if LPDT_HAVE_DNNL
  const std::shared_ptr<const DirectConv> direct = direct_conv_for(g);
  // oneDNN's fast kernels read a dense channels-last tensor: a node's slice of the k-node tensor
  // (pixels k*C apart) is gathered first, one byte per code, against im2col's kernel^2.
  const std::int64_t pixels = g.batch * g.height * g.width, c = g.in_channels;
  std::unique_ptr<std::uint8_t[]> dense;
  const std::uint8_t* src = x;
  if (pixel_stride != c) {
    dense.reset(new std::uint8_t[static_cast<std::size_t>(pixels * c)]);
    at::parallel_for(0, pixels, 1024, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t q = begin; q < end; ++q) {
        std::memcpy(dense.get() + q * c, x + q * pixel_stride, static_cast<std::size_t>(c));
      }
    });
    src = dense.get();
  }
  std::unique_ptr<std::uint8_t[]> packed_weight(new std::uint8_t[direct->weight.get_size()]);
  std::unique_ptr<std::uint8_t[]> scratch(new std::uint8_t[direct->scratchpad.get_size() + 1]);
  std::int32_t zero = x_zero;
  const dnnl::engine& engine = cpu_engine();
  dnnl::memory src_memory(direct->src, engine, const_cast<std::uint8_t*>(src));
  dnnl::memory plain_weight(direct->plain_weight, engine, const_cast<std::int8_t*>(weight));
  dnnl::memory weight_memory(direct->weight, engine, packed_weight.get());
  dnnl::memory dst_memory(direct->dst, engine, acc);
  dnnl::memory zero_memory(dnnl::memory::desc({1}, DataType::s32, Tag::x), engine, &zero);
  dnnl::memory scratch_memory(direct->scratchpad, engine, scratch.get());
  dnnl::stream stream(engine);
  direct->weight_reorder.execute(stream, plain_weight, weight_memory);
  direct->conv.execute(stream, {{DNNL_ARG_SRC, src_memory},
                                {DNNL_ARG_WEIGHTS, weight_memory},
                                {DNNL_ARG_DST, dst_memory},
                                {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zero_memory},
                                {DNNL_ARG_SCRATCHPAD, scratch_memory}});
  stream.wait();
  if (weight_zero == 0) return;
  // Correction stage: acc[p, o] -= z_w * S[p] (the header's formula), or S for the caller.
  if (deferred_sums != nullptr) {
    window_sums(src, c, x_zero, g, deferred_sums);
    return;
  }
  const std::int64_t positions = g.positions(), cout = g.out_channels;
  std::vector<std::int32_t> sums(static_cast<std::size_t>(positions));
  window_sums(src, c, x_zero, g, sums.data());
  const std::int32_t z = weight_zero;
  at::parallel_for(0, positions, 256, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t p = begin; p < end; ++p) {
      const std::int32_t correction = z * sums[p];
      std::int32_t* row = acc + p * cout;
      for (std::int64_t o = 0; o < cout; ++o) row[o] -= correction;
    }
  });
#else
  (void)x, (void)x_zero, (void)weight, (void)weight_zero, (void)acc, (void)deferred_sums;
#endif
}

}  // namespace lpdt::quant
