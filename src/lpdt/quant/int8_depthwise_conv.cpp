#include "lpdt/quant/int8_depthwise_conv.h"

#include <ATen/Parallel.h>

#include <algorithm>

namespace lpdt::quant {

void depthwise_taps(const std::int8_t* packed, std::int8_t zero, std::int64_t channels,
                    std::int64_t kernel, std::int32_t* taps) {
  const std::int64_t area = kernel * kernel;
  for (std::int64_t c = 0; c < channels; ++c) {
    for (std::int64_t t = 0; t < area; ++t) {
      taps[t * channels + c] = std::int32_t{packed[c * area + t]} - zero;
    }
  }
}

void depthwise_conv_s32(const std::uint8_t* x, std::int64_t pixel_stride, std::uint8_t x_zero,
                        const std::int32_t* taps, const ConvGeometry& g, std::int32_t* acc) {
  const std::int64_t ho = g.out_height(), wo = g.out_width(), c = g.in_channels;
  const std::int32_t zero = x_zero;
  at::parallel_for(0, g.batch * ho, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int64_t b = row / ho, oy = row % ho;
      for (std::int64_t ox = 0; ox < wo; ++ox) {
        std::int32_t* out = acc + ((b * ho + oy) * wo + ox) * c;
        std::fill(out, out + c, 0);
        for (std::int64_t ky = 0; ky < g.kernel; ++ky) {
          const std::int64_t y = oy * g.stride - g.padding + ky;
          if (y < 0 || y >= g.height) continue;
          for (std::int64_t kx = 0; kx < g.kernel; ++kx) {
            const std::int64_t xx = ox * g.stride - g.padding + kx;
            if (xx < 0 || xx >= g.width) continue;
            const std::uint8_t* in = x + ((b * g.height + y) * g.width + xx) * pixel_stride;
            const std::int32_t* t = taps + (ky * g.kernel + kx) * c;
#pragma omp simd
            for (std::int64_t ch = 0; ch < c; ++ch) out[ch] += (std::int32_t{in[ch]} - zero) * t[ch];
          }
        }
      }
    }
  });
}

void depthwise_input_grad_s32(const std::uint8_t* gy, std::int64_t pixel_stride,
                              std::uint8_t gy_zero, const std::int32_t* taps,
                              const ConvGeometry& g, std::int32_t* acc) {
  const std::int64_t ho = g.out_height(), wo = g.out_width(), c = g.in_channels;
  const std::int32_t zero = gy_zero;
  // Gathered per input pixel (not scattered per output pixel), so that threads write disjoint
  // rows: input (y, x) is read by output oy where oy * stride - padding + ky = y.
  at::parallel_for(0, g.batch * g.height, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int64_t b = row / g.height, y = row % g.height;
      for (std::int64_t xx = 0; xx < g.width; ++xx) {
        std::int32_t* out = acc + ((b * g.height + y) * g.width + xx) * c;
        std::fill(out, out + c, 0);
        for (std::int64_t ky = 0; ky < g.kernel; ++ky) {
          const std::int64_t oy_scaled = y + g.padding - ky;
          if (oy_scaled < 0 || oy_scaled % g.stride != 0) continue;
          const std::int64_t oy = oy_scaled / g.stride;
          if (oy >= ho) continue;
          for (std::int64_t kx = 0; kx < g.kernel; ++kx) {
            const std::int64_t ox_scaled = xx + g.padding - kx;
            if (ox_scaled < 0 || ox_scaled % g.stride != 0) continue;
            const std::int64_t ox = ox_scaled / g.stride;
            if (ox >= wo) continue;
            const std::uint8_t* in = gy + ((b * ho + oy) * wo + ox) * pixel_stride;
            const std::int32_t* t = taps + (ky * g.kernel + kx) * c;
#pragma omp simd
            for (std::int64_t ch = 0; ch < c; ++ch) out[ch] += (std::int32_t{in[ch]} - zero) * t[ch];
          }
        }
      }
    }
  });
}

}  // namespace lpdt::quant
