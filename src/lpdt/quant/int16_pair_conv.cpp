#include "lpdt/quant/int16_pair_conv.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstring>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"

#if LPDT_HAVE_SIMD_LEVELS
#include <immintrin.h>
#endif

namespace lpdt::quant {
namespace {

// Output channels per block: two registers of 8 int32 lanes.
constexpr std::int64_t kOutBlock = 16;
// Output pixels per block: 6 x 2 accumulators + 2 weight registers + 1 broadcast = 15 of the 16
// AVX2 registers.
constexpr int kMaxPixels = 6;

std::int64_t round_up_even(std::int64_t n) { return n + (n & 1); }

// dst[p * channels + c] = src[p * pixel_stride + c] - zero for c < count, 0 for count <= c <
// channels: one row of pixels as int16 (channels = count or count + 1).
LPDT_CPU_CLONES void codes_minus_zero(const std::uint8_t* __restrict src,
                                      std::int64_t pixel_stride, std::int64_t count,
                                      std::int64_t channels, std::int16_t zero,
                                      std::int64_t pixels, std::int16_t* __restrict dst) {
  for (std::int64_t p = 0; p < pixels; ++p) {
    for (std::int64_t c = 0; c < count; ++c) {
      dst[p * channels + c] = static_cast<std::int16_t>(src[p * pixel_stride + c] - zero);
    }
    if (channels != count) dst[p * channels + count] = 0;
  }
}

// The input as int16 q - z_x, zero-padded by g.padding on every side and to an even channel
// count: [batch, H + 2 padding, W + 2 padding, Cin rounded up to even].
at::Tensor padded_int16_input(const std::uint8_t* x, std::int64_t pixel_stride,
                              std::uint8_t x_zero, const ConvGeometry& g) {
  const std::int64_t channels = round_up_even(g.in_channels);
  const std::int64_t padded_h = g.height + 2 * g.padding, padded_w = g.width + 2 * g.padding;
  at::Tensor padded = at::empty({g.batch, padded_h, padded_w, channels}, at::kShort);
  std::int16_t* out = padded.data_ptr<std::int16_t>();
  const std::int16_t zero = x_zero;
  at::parallel_for(0, g.batch * padded_h, 16, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      std::int16_t* dst = out + row * padded_w * channels;
      const std::int64_t b = row / padded_h, y = row % padded_h - g.padding;
      if (y < 0 || y >= g.height) {
        std::fill(dst, dst + padded_w * channels, std::int16_t{0});
        continue;
      }
      std::fill(dst, dst + g.padding * channels, std::int16_t{0});
      std::fill(dst + (g.padding + g.width) * channels, dst + padded_w * channels,
                std::int16_t{0});
      codes_minus_zero(x + (b * g.height + y) * g.width * pixel_stride, pixel_stride,
                       g.in_channels, channels, zero, g.width, dst + g.padding * channels);
    }
  });
  return padded;
}

// The weights w - z_w as int16, [ceil(Cout / 16)][kernel^2][Cin rounded up to even / 2][16][2]:
// for each block of 16 output channels, tap and pair of input channels, the 32 values one
// vpmaddwd pair of registers multiplies; channels past Cout or Cin are 0.
at::Tensor packed_int16_weights(const std::int8_t* weight, std::int8_t weight_zero,
                                const ConvGeometry& g) {
  const std::int64_t taps = g.kernel * g.kernel, pairs = round_up_even(g.in_channels) / 2;
  const std::int64_t blocks = (g.out_channels + kOutBlock - 1) / kOutBlock;
  at::Tensor packed = at::zeros({blocks, taps, pairs, kOutBlock, 2}, at::kShort);
  std::int16_t* out = packed.data_ptr<std::int16_t>();
  for (std::int64_t o = 0; o < g.out_channels; ++o) {
    for (std::int64_t c = 0; c < g.in_channels; ++c) {
      for (std::int64_t t = 0; t < taps; ++t) {
        const std::int64_t index =
            (((o / kOutBlock) * taps + t) * pairs + c / 2) * kOutBlock * 2 + (o % kOutBlock) * 2 +
            c % 2;
        out[index] =
            static_cast<std::int16_t>(int{weight[(o * g.in_channels + c) * taps + t]} -
                                      int{weight_zero});
      }
    }
  }
  return packed;
}

#if LPDT_HAVE_SIMD_LEVELS

// The layout of one call's operands.
struct PairConvPlan {
  std::int64_t kernel, pairs;   // taps per side, input-channel pairs
  std::int64_t pixel_step;      // int16 elements from one output pixel's window to the next
  std::int64_t row_step;        // int16 elements from one padded input row to the next
  std::int64_t out_channels;    // acc's row length
};

// kPixels output pixels (consecutive in a row) x one block of 16 output channels, of which
// `valid` are real: in points at the first pixel's window corner, w at the block's weights.
template <int kPixels>
LPDT_TARGET_X86_64_V3 [[gnu::always_inline]] inline void pixel_block(
    const std::int16_t* in, const std::int16_t* w, const PairConvPlan& plan, std::int64_t valid,
    std::int32_t* out) {
  __m256i acc[kPixels][2];
  for (int i = 0; i < kPixels; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_si256();
  const std::int64_t channels = 2 * plan.pairs;
  for (std::int64_t ky = 0; ky < plan.kernel; ++ky) {
    for (std::int64_t kx = 0; kx < plan.kernel; ++kx) {
      const std::int16_t* src = in + ky * plan.row_step + kx * channels;
      const std::int16_t* tap = w + (ky * plan.kernel + kx) * plan.pairs * 2 * kOutBlock;
      for (std::int64_t j = 0; j < plan.pairs; ++j) {
        const __m256i w_low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tap + j * 32));
        const __m256i w_high =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tap + j * 32 + 16));
        for (int i = 0; i < kPixels; ++i) {
          // Pixel i's channels 2j and 2j + 1, broadcast to every 32-bit lane.
          std::int32_t pair;
          std::memcpy(&pair, src + i * plan.pixel_step + 2 * j, sizeof pair);
          const __m256i a = _mm256_set1_epi32(pair);
          acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(a, w_low));
          acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(a, w_high));
        }
      }
    }
  }
  for (int i = 0; i < kPixels; ++i) {
    std::int32_t* dst = out + i * plan.out_channels;
    if (valid == kOutBlock) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), acc[i][0]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 8), acc[i][1]);
    } else {
      alignas(32) std::int32_t lanes[kOutBlock];
      _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc[i][0]);
      _mm256_store_si256(reinterpret_cast<__m256i*>(lanes + 8), acc[i][1]);
      std::memcpy(dst, lanes, static_cast<std::size_t>(valid) * sizeof(std::int32_t));
    }
  }
}

// Output rows [begin, end) of (b, oy): every pixel and every output-channel block.
LPDT_TARGET_X86_64_V3 void pair_conv_rows(const std::int16_t* input, const std::int16_t* weights,
                                          const ConvGeometry& g, const PairConvPlan& plan,
                                          std::int32_t* acc, std::int64_t begin,
                                          std::int64_t end) {
  const std::int64_t ho = g.out_height(), wo = g.out_width();
  const std::int64_t padded_h = g.height + 2 * g.padding;
  const std::int64_t block_weights = plan.kernel * plan.kernel * plan.pairs * 2 * kOutBlock;
  for (std::int64_t row = begin; row < end; ++row) {
    const std::int64_t b = row / ho, oy = row % ho;
    const std::int16_t* in_row = input + (b * padded_h + oy * g.stride) * plan.row_step;
    std::int32_t* out_row = acc + row * wo * plan.out_channels;
    for (std::int64_t block = 0; block * kOutBlock < g.out_channels; ++block) {
      const std::int16_t* w = weights + block * block_weights;
      const std::int64_t valid = std::min(kOutBlock, g.out_channels - block * kOutBlock);
      std::int64_t ox = 0;
      while (ox < wo) {
        const std::int64_t left = wo - ox;
        // 8 or 7 pixels as 4 + 4 or 4 + 3 rather than 6 + 2 or 6 + 1.
        const int pixels = left == 8 || left == 7 ? 4 : static_cast<int>(std::min<std::int64_t>(
                                                             left, kMaxPixels));
        const std::int16_t* in = in_row + ox * plan.pixel_step;
        std::int32_t* out = out_row + ox * plan.out_channels + block * kOutBlock;
        switch (pixels) {
          case 6: pixel_block<6>(in, w, plan, valid, out); break;
          case 5: pixel_block<5>(in, w, plan, valid, out); break;
          case 4: pixel_block<4>(in, w, plan, valid, out); break;
          case 3: pixel_block<3>(in, w, plan, valid, out); break;
          case 2: pixel_block<2>(in, w, plan, valid, out); break;
          default: pixel_block<1>(in, w, plan, valid, out); break;
        }
        ox += pixels;
      }
    }
  }
}

#endif  // LPDT_HAVE_SIMD_LEVELS

}  // namespace

bool int16_pair_conv_runs_here() {
#if LPDT_HAVE_SIMD_LEVELS
  return simd_level() == SimdLevel::kAvx2;
#else
  return false;
#endif
}

bool int16_pair_conv_handles(const ConvGeometry& g) {
  return int16_pair_conv_runs_here() && g.groups == 1 &&
         g.kernel * g.kernel * round_up_even(g.in_channels) <= kMaxInt16PairTerms;
}

void int16_pair_conv_s32(const std::uint8_t* x, std::int64_t pixel_stride, std::uint8_t x_zero,
                         const std::int8_t* weight, std::int8_t weight_zero, const ConvGeometry& g,
                         std::int32_t* acc) {
  LPDT_CHECK(int16_pair_conv_handles(g), "int16_pair_conv_s32: a geometry it does not handle");
  LPDT_CHECK(pixel_stride >= g.in_channels, "int16_pair_conv_s32: pixel_stride < in_channels");
#if LPDT_HAVE_SIMD_LEVELS
  const at::Tensor input = padded_int16_input(x, pixel_stride, x_zero, g);
  const at::Tensor weights = packed_int16_weights(weight, weight_zero, g);
  const std::int64_t channels = round_up_even(g.in_channels);
  PairConvPlan plan;
  plan.kernel = g.kernel;
  plan.pairs = channels / 2;
  plan.pixel_step = g.stride * channels;
  plan.row_step = (g.width + 2 * g.padding) * channels;
  plan.out_channels = g.out_channels;
  const std::int16_t* in = input.data_ptr<std::int16_t>();
  const std::int16_t* w = weights.data_ptr<std::int16_t>();
  at::parallel_for(0, g.batch * g.out_height(), 1, [&](std::int64_t begin, std::int64_t end) {
    pair_conv_rows(in, w, g, plan, acc, begin, end);
  });
#else
  (void)x, (void)x_zero, (void)weight, (void)weight_zero, (void)acc;
#endif
}

}  // namespace lpdt::quant
