#include "lpdt/quant/int8_conv.h"

#include <ATen/Parallel.h>

#include <cstring>
#include <vector>

#include "lpdt/core/error.h"
#include "lpdt/quant/int8_gemm.h"

namespace lpdt::quant {
namespace {

float scale_of(const QuantizedTensor& q, std::int64_t node) {
  return q.scale.data_ptr<float>()[node];
}
// gemmlowp zero points are integer codes in [0, 255] (checked by quantize()).
std::uint8_t activation_zero(const QuantizedTensor& q, std::int64_t node) {
  return static_cast<std::uint8_t>(q.zero_point.data_ptr<float>()[node]);
}
std::int8_t weight_zero(const QuantizedTensor& q, std::int64_t node) {
  return static_cast<std::int8_t>(static_cast<int>(q.zero_point.data_ptr<float>()[node]) - 128);
}

}  // namespace

void im2col_u8(const std::uint8_t* x, std::int64_t pixel_stride, const ConvGeometry& g,
               std::uint8_t pad, std::uint8_t* cols) {
  const std::int64_t ho = g.out_height(), wo = g.out_width(), c = g.in_channels;
  at::parallel_for(0, g.batch, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t b = begin; b < end; ++b) {
      for (std::int64_t oy = 0; oy < ho; ++oy) {
        for (std::int64_t ox = 0; ox < wo; ++ox) {
          std::uint8_t* row = cols + ((b * ho + oy) * wo + ox) * g.patch();
          for (std::int64_t ky = 0; ky < g.kernel; ++ky) {
            const std::int64_t y = oy * g.stride - g.padding + ky;
            for (std::int64_t kx = 0; kx < g.kernel; ++kx) {
              const std::int64_t xx = ox * g.stride - g.padding + kx;
              std::uint8_t* dst = row + (ky * g.kernel + kx) * c;
              if (y < 0 || y >= g.height || xx < 0 || xx >= g.width) {
                std::memset(dst, pad, static_cast<std::size_t>(c));
              } else {
                std::memcpy(dst, x + ((b * g.height + y) * g.width + xx) * pixel_stride,
                            static_cast<std::size_t>(c));
              }
            }
          }
        }
      }
    }
  });
}

void col2im_add(const float* cols, const ConvGeometry& g, float* dx, std::int64_t pixel_stride) {
  const std::int64_t ho = g.out_height(), wo = g.out_width(), c = g.in_channels;
  // Samples write disjoint parts of dx: parallel over samples, sequential within one.
  at::parallel_for(0, g.batch, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t b = begin; b < end; ++b) {
      for (std::int64_t oy = 0; oy < ho; ++oy) {
        for (std::int64_t ox = 0; ox < wo; ++ox) {
          const float* row = cols + ((b * ho + oy) * wo + ox) * g.patch();
          for (std::int64_t ky = 0; ky < g.kernel; ++ky) {
            const std::int64_t y = oy * g.stride - g.padding + ky;
            if (y < 0 || y >= g.height) continue;
            for (std::int64_t kx = 0; kx < g.kernel; ++kx) {
              const std::int64_t xx = ox * g.stride - g.padding + kx;
              if (xx < 0 || xx >= g.width) continue;
              const float* src = row + (ky * g.kernel + kx) * c;
              float* dst = dx + ((b * g.height + y) * g.width + xx) * pixel_stride;
              for (std::int64_t ch = 0; ch < c; ++ch) dst[ch] += src[ch];
            }
          }
        }
      }
    }
  });
}

at::Tensor pack_conv_weight(const at::Tensor& codes) {
  LPDT_CHECK(codes.dim() == 5 && codes.scalar_type() == at::kByte, "pack_conv_weight: bad codes");
  const std::int64_t k = codes.size(0), cout = codes.size(1);
  // [k, Cout, Cin, kh, kw] -> [k, kh, kw, Cin, Cout], shifted to int8.
  return (codes.to(at::kInt) - 128)
      .to(at::kChar)
      .permute({0, 3, 4, 2, 1})
      .contiguous()
      .view({k, -1, cout});
}

at::Tensor int8_conv2d(const QuantizedTensor& x, const QuantizedTensor& w,
                       const at::Tensor& packed_w, const at::Tensor& bias, const ConvGeometry& g,
                       std::int64_t k) {
  LPDT_CHECK(x.codes.is_contiguous(at::MemoryFormat::ChannelsLast), "int8_conv2d: x layout");
  const std::int64_t ho = g.out_height(), wo = g.out_width(), n = g.positions();
  at::Tensor y = at::empty(
      {g.batch, k * g.out_channels, ho, wo},
      at::TensorOptions().dtype(at::kFloat).memory_format(at::MemoryFormat::ChannelsLast));
  // Scratch buffers, not zero-filled (every element is written before it is read).
  const at::Tensor cols_buffer = at::empty({n * g.patch()}, at::kByte);
  const at::Tensor acc_buffer = at::empty({n * g.out_channels}, at::kInt);
  std::uint8_t* cols = cols_buffer.data_ptr<std::uint8_t>();
  std::int32_t* acc = acc_buffer.data_ptr<std::int32_t>();
  const float* b = bias.defined() ? bias.data_ptr<float>() : nullptr;
  float* out = y.data_ptr<float>();
  for (std::int64_t node = 0; node < k; ++node) {
    const std::uint8_t zx = activation_zero(x, node);
    im2col_u8(x.codes.data_ptr<std::uint8_t>() + node * g.in_channels, k * g.in_channels, g, zx,
              cols);
    gemm_u8s8s32(n, g.out_channels, g.patch(), cols, g.patch(), zx,
                 packed_w.data_ptr<std::int8_t>() + node * g.patch() * g.out_channels,
                 g.out_channels, /*b_transposed=*/false, weight_zero(w, node), acc, g.out_channels);
    // Requantization stage: int32 -> real, s_x s_w * acc + bias, into node's channel slice.
    const float s = scale_of(x, node) * scale_of(w, node);
    const float* node_bias = b ? b + node * g.out_channels : nullptr;
    at::parallel_for(0, n, 256, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t p = begin; p < end; ++p) {
        float* dst = out + p * k * g.out_channels + node * g.out_channels;
        const std::int32_t* src = acc + p * g.out_channels;
        for (std::int64_t c = 0; c < g.out_channels; ++c) {
          dst[c] = s * static_cast<float>(src[c]) + (node_bias ? node_bias[c] : 0.0f);
        }
      }
    });
  }
  return y;
}

at::Tensor int8_conv2d_input_grad(const QuantizedTensor& gy, const QuantizedTensor& w,
                                  const at::Tensor& packed_w, const ConvGeometry& g,
                                  std::int64_t k) {
  LPDT_CHECK(gy.codes.is_contiguous(at::MemoryFormat::ChannelsLast), "int8 input grad: layout");
  if (g.stride == 1 && 2 * g.padding == g.kernel - 1) {
    // A "same" convolution's input gradient is itself a convolution: of the output gradient,
    // padded by kernel - 1 - padding, with the kernel rotated by 180 degrees and its channels
    // swapped. As a forward integer convolution it needs no col2im, and its GEMM has the large
    // inner dimension kernel^2 * Cout instead of Cout (measured 2-4x faster per layer).
    ConvGeometry t = g;
    t.in_channels = g.out_channels;
    t.out_channels = g.in_channels;
    t.height = g.out_height();
    t.width = g.out_width();
    t.padding = g.kernel - 1 - g.padding;
    const at::Tensor rotated = (w.codes.flip({3, 4}).to(at::kInt) - 128)  // [k, Cout, Cin, kh, kw]
                                   .to(at::kChar)
                                   .permute({0, 3, 4, 1, 2})  // [k, kh, kw, Cout, Cin]
                                   .contiguous()
                                   .view({k, -1, g.in_channels});
    // Same codes and zero point, so the real weight scale s_w and zero z_w carry over.
    return int8_conv2d(gy, w, rotated, at::Tensor(), t, k);
  }
  const std::int64_t n = g.positions();
  // at::zeros ignores a memory format in its options: empty (which honours it), then zero.
  at::Tensor dx =
      at::empty({g.batch, k * g.in_channels, g.height, g.width},
                at::TensorOptions().dtype(at::kFloat).memory_format(at::MemoryFormat::ChannelsLast))
          .zero_();
  std::vector<std::int32_t> acc(static_cast<std::size_t>(n * g.patch()));
  std::vector<float> cols(static_cast<std::size_t>(n * g.patch()));
  // B as [Cout, patch] rows: oneDNN's u8s8s32 GEMM is far slower with a transposed B at these
  // shapes (K = Cout is small).
  const at::Tensor packed_t = packed_w.transpose(1, 2).contiguous();  // [k, Cout, patch]
  for (std::int64_t node = 0; node < k; ++node) {
    // The node's output-gradient codes are rows of Cout values, k*Cout apart: A with lda.
    gemm_u8s8s32(n, g.patch(), g.out_channels,
                 gy.codes.data_ptr<std::uint8_t>() + node * g.out_channels, k * g.out_channels,
                 activation_zero(gy, node),
                 packed_t.data_ptr<std::int8_t>() + node * g.patch() * g.out_channels, g.patch(),
                 /*b_transposed=*/false, weight_zero(w, node), acc.data(), g.patch());
    const float s = scale_of(gy, node) * scale_of(w, node);
    at::parallel_for(0, n * g.patch(), 4096, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) cols[i] = s * static_cast<float>(acc[i]);
    });
    col2im_add(cols.data(), g, dx.data_ptr<float>() + node * g.in_channels, k * g.in_channels);
  }
  return dx;
}

at::Tensor int8_linear(const QuantizedTensor& x, const QuantizedTensor& w, const at::Tensor& bias) {
  const std::int64_t k = x.codes.size(0), b = x.codes.size(1), in = x.codes.size(2),
                     out = w.codes.size(1);
  const at::Tensor wq = (w.codes.to(at::kInt) - 128).to(at::kChar).contiguous();  // [k, out, in]
  at::Tensor acc = at::empty({k, b, out}, at::kInt);
  for (std::int64_t node = 0; node < k; ++node) {
    gemm_u8s8s32(b, out, in, x.codes.data_ptr<std::uint8_t>() + node * b * in, in,
                 activation_zero(x, node), wq.data_ptr<std::int8_t>() + node * out * in, in,
                 /*b_transposed=*/true, weight_zero(w, node),
                 acc.data_ptr<std::int32_t>() + node * b * out, out);
  }
  at::Tensor y = acc.to(at::kFloat) * (x.scale * w.scale).view({k, 1, 1});
  if (bias.defined()) y += bias.unsqueeze(1);
  return y;
}

at::Tensor int8_linear_input_grad(const QuantizedTensor& gy, const QuantizedTensor& w) {
  const std::int64_t k = gy.codes.size(0), b = gy.codes.size(1), out = gy.codes.size(2),
                     in = w.codes.size(2);
  const at::Tensor wq = (w.codes.to(at::kInt) - 128).to(at::kChar).contiguous();  // [k, out, in]
  at::Tensor acc = at::empty({k, b, in}, at::kInt);
  for (std::int64_t node = 0; node < k; ++node) {
    gemm_u8s8s32(b, in, out, gy.codes.data_ptr<std::uint8_t>() + node * b * out, out,
                 activation_zero(gy, node), wq.data_ptr<std::int8_t>() + node * out * in, in,
                 /*b_transposed=*/false, weight_zero(w, node),
                 acc.data_ptr<std::int32_t>() + node * b * in, in);
  }
  return acc.to(at::kFloat) * (gy.scale * w.scale).view({k, 1, 1});
}

}  // namespace lpdt::quant
