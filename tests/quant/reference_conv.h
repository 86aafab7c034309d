#pragma once
// The plain-loop reference for one node's 8-bit convolution sums, shared by the tests of the
// integer backend's convolution kernels (int8_direct_conv.h, exact_float_conv.h).
#include <torch/types.h>

#include <cstdint>

#include "lpdt/quant/int8_conv.h"

namespace lpdt::quant {

// acc[p, o] = sum over the taps inside the image of (x - x_zero) * (w - w_zero).
inline at::Tensor reference_conv(const at::Tensor& x, std::int64_t pixel_stride,
                                 std::uint8_t x_zero, const at::Tensor& w, std::int8_t w_zero,
                                 const ConvGeometry& g) {
  const std::uint8_t* xp = x.data_ptr<std::uint8_t>();
  const std::int8_t* wp = w.data_ptr<std::int8_t>();
  const std::int64_t ho = g.out_height(), wo = g.out_width(), c = g.in_channels;
  at::Tensor acc = at::empty({g.positions(), g.out_channels}, at::kInt);
  std::int32_t* out = acc.data_ptr<std::int32_t>();
  for (std::int64_t b = 0; b < g.batch; ++b)
    for (std::int64_t oy = 0; oy < ho; ++oy)
      for (std::int64_t ox = 0; ox < wo; ++ox)
        for (std::int64_t o = 0; o < g.out_channels; ++o) {
          std::int64_t sum = 0;
          for (std::int64_t ky = 0; ky < g.kernel; ++ky)
            for (std::int64_t kx = 0; kx < g.kernel; ++kx) {
              const std::int64_t y = oy * g.stride - g.padding + ky;
              const std::int64_t xx = ox * g.stride - g.padding + kx;
              if (y < 0 || y >= g.height || xx < 0 || xx >= g.width) continue;
              for (std::int64_t ch = 0; ch < c; ++ch) {
                const std::int64_t code =
                    xp[((b * g.height + y) * g.width + xx) * pixel_stride + ch];
                const std::int64_t weight = wp[((o * c + ch) * g.kernel + ky) * g.kernel + kx];
                sum += (code - x_zero) * (weight - w_zero);
              }
            }
          out[((b * ho + oy) * wo + ox) * g.out_channels + o] = static_cast<std::int32_t>(sum);
        }
  return acc;
}

// A test case's geometry: a 9x7 image, so that rows and columns differ.
inline ConvGeometry test_geometry(std::int64_t batch, std::int64_t in_channels,
                                  std::int64_t out_channels, std::int64_t kernel,
                                  std::int64_t stride, std::int64_t padding) {
  ConvGeometry g;
  g.batch = batch, g.in_channels = in_channels, g.out_channels = out_channels, g.height = 9,
  g.width = 7, g.kernel = kernel, g.stride = stride, g.padding = padding;
  return g;
}

// One node's codes for g: x as a channels-last slice with `pixel_stride`, w [Cout, Cin, k, k]
// int8 (codes - 128), and their zero points.
struct ConvCodes {
  at::Tensor x, w;
  std::uint8_t x_zero;
  std::int8_t w_zero;
};
// Random codes with zero points 97 and -31, or extreme ones: every product (255 - 0) * (-128 -
// 127), the largest sums in magnitude.
inline ConvCodes test_conv_codes(const ConvGeometry& g, std::int64_t pixel_stride, bool extreme) {
  ConvCodes c{
      torch::randint(0, 256, {g.batch * g.height * g.width * pixel_stride}, torch::kInt)
          .to(at::kByte),
      torch::randint(-128, 128, {g.out_channels, g.in_channels, g.kernel, g.kernel}, torch::kInt)
          .to(at::kChar),
      97, -31};
  if (extreme) {
    c.x.fill_(255);
    c.w.fill_(-128);
    c.x_zero = 0;
    c.w_zero = 127;
  }
  return c;
}

}  // namespace lpdt::quant
