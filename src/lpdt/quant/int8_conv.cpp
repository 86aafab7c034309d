#include "lpdt/quant/int8_conv.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <cstring>
#include <vector>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"
#include "lpdt/quant/exact_float_conv.h"
#include "lpdt/quant/int8_depthwise_conv.h"
#include "lpdt/quant/int16_pair_conv.h"
#include "lpdt/quant/int8_direct_conv.h"
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
  const std::int64_t ho = g.out_height(), wo = g.out_width(), c = g.group_in();
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
  const std::int64_t ho = g.out_height(), wo = g.out_width(), c = g.group_in();
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

at::Tensor shift_weight_codes(const at::Tensor& codes) {
  LPDT_CHECK(codes.dim() == 5 && codes.scalar_type() == at::kByte && codes.device().is_cpu(),
             "shift_weight_codes: codes");
  // code - 128 in two's complement is code with its top bit flipped: one pass over the codes,
  // where the tensor expression (widen, subtract a scalar, narrow) took 12 operator calls and
  // three temporaries, for each of the 40-odd weight tensors a ResNet-20 step shifts.
  const at::Tensor in = codes.contiguous();
  at::Tensor out = at::empty(in.sizes(), in.options().dtype(at::kChar));
  const std::uint8_t* src = in.data_ptr<std::uint8_t>();
  std::int8_t* dst = out.data_ptr<std::int8_t>();
  const std::int64_t n = in.numel();
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) dst[i] = static_cast<std::int8_t>(src[i] ^ 0x80u);
  return out;
}

at::Tensor pack_conv_weight(const at::Tensor& shifted, std::int64_t groups) {
  LPDT_CHECK(shifted.dim() == 5 && shifted.scalar_type() == at::kChar,
             "pack_conv_weight: bad codes");
  const std::int64_t k = shifted.size(0), cout = shifted.size(1);
  LPDT_CHECK(groups >= 1 && cout % groups == 0, "pack_conv_weight: groups");
  // [k, Cout, Cin/G, kh, kw] -> [k, G, Cout/G, Cin/G, kh, kw] -> [k, G, kh, kw, Cin/G, Cout/G].
  return shifted.view({k, groups, cout / groups, shifted.size(2), shifted.size(3), shifted.size(4)})
      .permute({0, 1, 4, 5, 3, 2})
      .contiguous()
      .view({k, groups, -1, cout / groups});
}

namespace {

// One position's requantization: dst[o] = s * (acc[o] - correction) (+ bias[o]). Cloned per ISA
// and without a select inside the loop, so that it runs on full-width vectors (cpu_dispatch.h).
LPDT_CPU_CLONES void scale_position(const std::int32_t* __restrict acc, std::int64_t channels,
                                    float s, std::int32_t correction, const float* __restrict bias,
                                    float* __restrict dst) {
  if (bias == nullptr) {
    for (std::int64_t c = 0; c < channels; ++c) {
      dst[c] = s * static_cast<float>(acc[c] - correction);
    }
  } else {
    for (std::int64_t c = 0; c < channels; ++c) {
      dst[c] = s * static_cast<float>(acc[c] - correction) + bias[c];
    }
  }
}

// The same from sums held exactly in float32 (exact_float_conv.h): dst[o] = s * sum[o] (+ bias[o]),
// bit for bit what scale_position gives for the same sums as int32.
LPDT_CPU_CLONES void scale_float_position(const float* __restrict sums, std::int64_t channels,
                                          float s, const float* __restrict bias,
                                          float* __restrict dst) {
  if (bias == nullptr) {
    for (std::int64_t c = 0; c < channels; ++c) dst[c] = s * sums[c];
  } else {
    for (std::int64_t c = 0; c < channels; ++c) dst[c] = s * sums[c] + bias[c];
  }
}

// Requantization stage: int32 -> real, s * (acc - z_w S[p]) (+ bias), for `channels` channels of
// every position p: acc [positions, channels] into out + p * out_stride. window_sums = S, the
// direct convolution's weight-zero-point correction (int8_direct_conv.h) folded into this pass;
// null when there is none.
void write_scaled(const std::int32_t* acc, std::int64_t positions, std::int64_t channels, float s,
                  const float* bias, float* out, std::int64_t out_stride,
                  const std::int32_t* window_sums = nullptr, std::int32_t weight_zero = 0) {
  at::parallel_for(0, positions, 256, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t p = begin; p < end; ++p) {
      const std::int32_t correction = window_sums ? weight_zero * window_sums[p] : 0;
      scale_position(acc + p * channels, channels, s, correction, bias, out + p * out_stride);
    }
  });
}

// write_scaled for exact_float_conv's sums [positions, channels], float32 or int32.
void write_scaled_sums(const at::Tensor& sums, float s, const float* bias, float* out,
                       std::int64_t out_stride) {
  const std::int64_t positions = sums.size(0), channels = sums.size(1);
  if (sums.scalar_type() == at::kInt) {
    write_scaled(sums.data_ptr<std::int32_t>(), positions, channels, s, bias, out, out_stride);
    return;
  }
  const float* data = sums.data_ptr<float>();
  at::parallel_for(0, positions, 256, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t p = begin; p < end; ++p) {
      scale_float_position(data + p * channels, channels, s, bias, out + p * out_stride);
    }
  });
}

// Every node's convolution of x's codes with `shifted` weights [k, Cout, Cin/G, kh, kw] int8
// (codes - 128; the scales and zero points are w's) -> [b, k*Cout, Ho, Wo] float32
// channels-last. int8_conv2d's body, also run with the rotated kernel by the input gradient.
at::Tensor convolve_nodes(const QuantizedTensor& x, const QuantizedTensor& w,
                          const at::Tensor& shifted, const at::Tensor& bias, const ConvGeometry& g,
                          std::int64_t k) {
  LPDT_CHECK(x.codes.is_contiguous(at::MemoryFormat::ChannelsLast), "int8_conv2d: x layout");
  LPDT_CHECK(shifted.dim() == 5 && shifted.size(1) == g.out_channels, "int8_conv2d: weight");
  const std::int64_t n = g.positions(), cin = g.in_channels, cout = g.out_channels;
  at::Tensor y = at::empty(
      {g.batch, k * cout, g.out_height(), g.out_width()},
      at::TensorOptions().dtype(at::kFloat).memory_format(at::MemoryFormat::ChannelsLast));
  const float* b = bias.defined() ? bias.data_ptr<float>() : nullptr;
  float* out = y.data_ptr<float>();
  const std::uint8_t* codes = x.codes.data_ptr<std::uint8_t>();
  const std::int64_t node_weights = shifted.numel() / k;
  if (g.depthwise()) {
    const at::Tensor taps_buffer = at::empty({g.kernel * g.kernel * cin}, at::kInt);
    const at::Tensor acc_buffer = at::empty({n * cout}, at::kInt);
    std::int32_t* taps = taps_buffer.data_ptr<std::int32_t>();
    std::int32_t* acc = acc_buffer.data_ptr<std::int32_t>();
    for (std::int64_t node = 0; node < k; ++node) {
      depthwise_taps(shifted.data_ptr<std::int8_t>() + node * node_weights, weight_zero(w, node),
                     cin, g.kernel, taps);
      depthwise_conv_s32(codes + node * cin, k * cin, activation_zero(x, node), taps, g, acc);
      write_scaled(acc, n, cout, scale_of(x, node) * scale_of(w, node),
                   b ? b + node * cout : nullptr, out + node * cout, k * cout);
    }
    return y;
  }
  if (!int8_direct_conv_available() && int16_pair_conv_handles(g)) {
    // No exact int8 kernels in oneDNN on this CPU: exact int16 pair products of our own.
    const at::Tensor acc_buffer = at::empty({n * cout}, at::kInt);
    std::int32_t* acc = acc_buffer.data_ptr<std::int32_t>();
    for (std::int64_t node = 0; node < k; ++node) {
      int16_pair_conv_s32(codes + node * cin, k * cin, activation_zero(x, node),
                          shifted.data_ptr<std::int8_t>() + node * node_weights,
                          weight_zero(w, node), g, acc);
      write_scaled(acc, n, cout, scale_of(x, node) * scale_of(w, node),
                   b ? b + node * cout : nullptr, out + node * cout, k * cout);
    }
    return y;
  }
  if (g.groups == 1 && !int8_direct_conv_available() && have_int8_gemm() &&
      !int8_gemm_is_exact_in_onednn() && exact_float_conv_available()) {
    // No exact int8 kernels on this CPU: the same sums from float32 direct convolutions.
    for (std::int64_t node = 0; node < k; ++node) {
      const at::Tensor sums =
          exact_float_conv(codes + node * cin, k * cin, activation_zero(x, node),
                           shifted.data_ptr<std::int8_t>() + node * node_weights,
                           weight_zero(w, node), g);
      write_scaled_sums(sums, scale_of(x, node) * scale_of(w, node),
                        b ? b + node * cout : nullptr, out + node * cout, k * cout);
    }
    return y;
  }
  const at::Tensor acc_buffer = at::empty({n * (cout / g.groups)}, at::kInt);
  std::int32_t* acc = acc_buffer.data_ptr<std::int32_t>();
  if (g.groups == 1 && int8_direct_conv_available()) {
    std::vector<std::int32_t> sums(static_cast<std::size_t>(n));
    for (std::int64_t node = 0; node < k; ++node) {
      const std::int8_t z = weight_zero(w, node);
      // The correction is folded into the requantization pass instead of a pass of its own.
      int8_direct_conv_s32(codes + node * cin, k * cin, activation_zero(x, node),
                           shifted.data_ptr<std::int8_t>() + node * node_weights, z, g, acc,
                           sums.data());
      write_scaled(acc, n, cout, scale_of(x, node) * scale_of(w, node),
                   b ? b + node * cout : nullptr, out + node * cout, k * cout,
                   z != 0 ? sums.data() : nullptr, z);
    }
    return y;
  }
  const ConvGeometry group = g.group_geometry();
  const at::Tensor packed_w = pack_conv_weight(shifted, g.groups);
  // A 1x1 convolution with stride 1 reads each pixel's codes as they lie: its im2col would be a
  // copy, so the GEMM takes them in place (rows k*Cin apart).
  const bool pointwise = g.kernel == 1 && g.stride == 1 && g.padding == 0;
  // Scratch buffer, not zero-filled (every element is written before it is read).
  const at::Tensor cols_buffer = at::empty({pointwise ? 0 : n * group.patch()}, at::kByte);
  std::uint8_t* cols = cols_buffer.data_ptr<std::uint8_t>();
  const std::int8_t* packed = packed_w.data_ptr<std::int8_t>();
  const std::int64_t group_weights = group.patch() * group.out_channels;
  for (std::int64_t node = 0; node < k; ++node) {
    const std::uint8_t zx = activation_zero(x, node);
    const float s = scale_of(x, node) * scale_of(w, node);
    for (std::int64_t grp = 0; grp < g.groups; ++grp) {
      const std::uint8_t* group_codes = codes + node * cin + grp * group.in_channels;
      if (!pointwise) im2col_u8(group_codes, k * cin, group, zx, cols);
      gemm_u8s8s32(n, group.out_channels, group.patch(), pointwise ? group_codes : cols,
                   pointwise ? k * cin : group.patch(), zx,
                   packed + (node * g.groups + grp) * group_weights, group.out_channels,
                   /*b_transposed=*/false, weight_zero(w, node), acc, group.out_channels);
      const std::int64_t channel = node * cout + grp * group.out_channels;
      write_scaled(acc, n, group.out_channels, s, b ? b + channel : nullptr, out + channel,
                   k * cout);
    }
  }
  return y;
}

}  // namespace

at::Tensor int8_conv2d(const QuantizedTensor& x, const QuantizedTensor& w, const at::Tensor& bias,
                       const ConvGeometry& g, std::int64_t k) {
  RECORD_FUNCTION("lpdt::int8_conv2d", std::vector<c10::IValue>());
  return convolve_nodes(x, w, shift_weight_codes(w.codes), bias, g, k);
}

at::Tensor int8_conv2d_input_grad(const QuantizedTensor& gy, const QuantizedTensor& w,
                                  const ConvGeometry& g, std::int64_t k) {
  RECORD_FUNCTION("lpdt::int8_conv2d_input_grad", std::vector<c10::IValue>());
  LPDT_CHECK(gy.codes.is_contiguous(at::MemoryFormat::ChannelsLast), "int8 input grad: layout");
  const std::int64_t cin = g.in_channels, cout = g.out_channels;
  const at::Tensor shifted = shift_weight_codes(w.codes);  // [k, Cout, Cin/G, kh, kw]
  // The input gradient as a forward integer convolution of the (zero-interleaved) output
  // gradient: with the kernel rotated by 180 degrees and each group's channels swapped.
  const auto rotated_weights = [&] {
    const std::int64_t gin = g.group_in(), gout = g.group_out();
    return shifted.flip({3, 4})
        .view({k, g.groups, gout, gin, g.kernel, g.kernel})
        .transpose(2, 3)  // [k, G, Cin/G, Cout/G, kh, kw]
        .contiguous()
        .view({k, cin, gout, g.kernel, g.kernel});
  };
  if (g.stride > 1 && g.groups == 1 && g.padding <= g.kernel - 1 &&
      int8_direct_conv_available()) {
    // A strided convolution's input gradient is the stride-1 convolution of its output gradient
    // with stride - 1 zeros between neighbours (code = the zero point, which adds exactly 0),
    // padded by kernel - 1 - padding, plus the rows and columns the forward's floor dropped at
    // the far edge. stride^2 times the multiply-adds of the GEMM and col2im below, but on the
    // direct int8 kernels (VNNI / AMX): on AMX the four strided layers of a ResNet-20 node took
    // 0.5 ms each, where the GEMM path took 2.8 ms for each 3x3 one (docs/benchmarks.md, "CPUs
    // with AMX").
    const std::int64_t ho = g.out_height(), wo = g.out_width(), s = g.stride;
    // Input rows the forward's last window reaches past (so that the output is H x W again).
    const std::int64_t extra_h = g.height - (ho - 1) * s - g.kernel + 2 * g.padding;
    const std::int64_t extra_w = g.width - (wo - 1) * s - g.kernel + 2 * g.padding;
    ConvGeometry t = g;
    t.in_channels = cout;
    t.out_channels = cin;
    t.height = (ho - 1) * s + 1 + extra_h;
    t.width = (wo - 1) * s + 1 + extra_w;
    t.stride = 1;
    t.padding = g.kernel - 1 - g.padding;
    at::Tensor spread = at::empty(
        {g.batch, k * cout, t.height, t.width},
        at::TensorOptions().dtype(at::kByte).memory_format(at::MemoryFormat::ChannelsLast));
    for (std::int64_t node = 0; node < k; ++node) {
      spread.narrow(1, node * cout, cout).fill_(static_cast<int>(activation_zero(gy, node)));
    }
    spread.slice(2, 0, (ho - 1) * s + 1, s).slice(3, 0, (wo - 1) * s + 1, s).copy_(gy.codes);
    const QuantizedTensor spread_gy{spread, gy.scale, gy.zero_point};
    return convolve_nodes(spread_gy, w, rotated_weights(), at::Tensor(), t, k);
  }
  if (g.stride == 1 && 2 * g.padding == g.kernel - 1) {
    // A "same" convolution's input gradient is itself a convolution: of the output gradient,
    // padded by kernel - 1 - padding, with the kernel rotated by 180 degrees and each group's
    // channels swapped. As a forward integer convolution it needs no col2im, and its inner
    // dimension is kernel^2 * Cout instead of Cout (measured 2-4x faster per layer on the GEMM
    // path).
    ConvGeometry t = g;
    t.in_channels = cout;
    t.out_channels = cin;
    t.height = g.out_height();
    t.width = g.out_width();
    t.padding = g.kernel - 1 - g.padding;
    // Same codes and zero point, so the real weight scale s_w and zero z_w carry over.
    return convolve_nodes(gy, w, rotated_weights(), at::Tensor(), t, k);
  }
  // at::zeros ignores a memory format in its options: empty (which honours it), then zero.
  at::Tensor dx =
      at::empty({g.batch, k * cin, g.height, g.width},
                at::TensorOptions().dtype(at::kFloat).memory_format(at::MemoryFormat::ChannelsLast))
          .zero_();
  const std::uint8_t* codes = gy.codes.data_ptr<std::uint8_t>();
  float* dx_data = dx.data_ptr<float>();
  if (g.depthwise()) {
    const std::int64_t pixels = g.batch * g.height * g.width;
    const at::Tensor taps_buffer = at::empty({g.kernel * g.kernel * cin}, at::kInt);
    const at::Tensor acc_buffer = at::empty({pixels * cin}, at::kInt);
    std::int32_t* taps = taps_buffer.data_ptr<std::int32_t>();
    std::int32_t* acc = acc_buffer.data_ptr<std::int32_t>();
    for (std::int64_t node = 0; node < k; ++node) {
      depthwise_taps(shifted.data_ptr<std::int8_t>() + node * (shifted.numel() / k),
                     weight_zero(w, node), cin, g.kernel, taps);
      depthwise_input_grad_s32(codes + node * cout, k * cout, activation_zero(gy, node), taps, g,
                               acc);
      write_scaled(acc, pixels, cin, scale_of(gy, node) * scale_of(w, node), nullptr,
                   dx_data + node * cin, k * cin);
    }
    return dx;
  }
  const ConvGeometry group = g.group_geometry();
  const std::int64_t n = g.positions();
  std::vector<std::int32_t> acc(static_cast<std::size_t>(n * group.patch()));
  std::vector<float> cols(static_cast<std::size_t>(n * group.patch()));
  // B as [Cout/G, patch] rows: oneDNN's u8s8s32 GEMM is far slower with a transposed B at these
  // shapes (K = Cout/G is small).
  const at::Tensor packed_t =
      pack_conv_weight(shifted, g.groups).transpose(2, 3).contiguous();  // [k, G, Cout/G, patch]
  const std::int64_t group_weights = group.patch() * group.out_channels;
  for (std::int64_t node = 0; node < k; ++node) {
    const float s = scale_of(gy, node) * scale_of(w, node);
    for (std::int64_t grp = 0; grp < g.groups; ++grp) {
      // The group's output-gradient codes are rows of Cout/G values, k*Cout apart: A with lda.
      gemm_u8s8s32(
          n, group.patch(), group.out_channels, codes + node * cout + grp * group.out_channels,
          k * cout, activation_zero(gy, node),
          packed_t.data_ptr<std::int8_t>() + (node * g.groups + grp) * group_weights, group.patch(),
          /*b_transposed=*/false, weight_zero(w, node), acc.data(), group.patch());
      at::parallel_for(0, n * group.patch(), 4096, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) cols[i] = s * static_cast<float>(acc[i]);
      });
      col2im_add(cols.data(), group, dx_data + node * cin + grp * group.in_channels, k * cin);
    }
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
  RECORD_FUNCTION("lpdt::int8_linear_input_grad", std::vector<c10::IValue>());
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
