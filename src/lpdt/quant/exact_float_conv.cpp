#include "lpdt/quant/exact_float_conv.h"

#include <ATen/ATen.h>
#include <ATen/Config.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdlib>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"
#include "lpdt/core/same_conv_backward_data_form.h"
#include "lpdt/quant/int8_gemm.h"

namespace lpdt::quant {
namespace {

// Every integer of magnitude up to 2^24 is a float32.
constexpr std::int64_t kFloatExactLimit = std::int64_t{1} << 24;

// real[p * count + c] = x[p * pixel_stride + c] - zero for pixels p of [0, pixels), c < count:
// one chunk's channels of the codes, contiguous (channels-last [b, count, H, W]).
LPDT_CPU_CLONES void codes_to_real(const std::uint8_t* __restrict x, std::int64_t pixel_stride,
                                   std::int64_t count, float zero, std::int64_t pixels,
                                   float* __restrict real) {
  for (std::int64_t p = 0; p < pixels; ++p) {
    for (std::int64_t c = 0; c < count; ++c) {
      real[p * count + c] = static_cast<float>(x[p * pixel_stride + c]) - zero;
    }
  }
}

}  // namespace

bool exact_float_conv_available() { return AT_MKLDNN_ENABLED() != 0; }

std::vector<ChannelChunk> exact_float_conv_chunks(const std::int8_t* weight,
                                                  std::int8_t weight_zero, std::uint8_t x_zero,
                                                  const ConvGeometry& g) {
  const std::int64_t taps = g.kernel * g.kernel, cin = g.in_channels;
  // Then a single channel's bound, 255 * taps * 255, stays within 2^24.
  LPDT_CHECK(g.kernel >= 1 && taps <= kExactFloatChunk,
             "exact_float_conv: a " + std::to_string(g.kernel) + "x" + std::to_string(g.kernel) +
                 " kernel is too large for exact float32 sums (at most " +
                 std::to_string(kExactFloatChunk) + " taps per input channel)");
  // m_c = max over o of sum over taps of |w - z_w|.
  std::vector<std::int64_t> channel_bound(static_cast<std::size_t>(cin), 0);
  for (std::int64_t o = 0; o < g.out_channels; ++o) {
    for (std::int64_t c = 0; c < cin; ++c) {
      const std::int8_t* w = weight + (o * cin + c) * taps;
      std::int64_t sum = 0;
      for (std::int64_t t = 0; t < taps; ++t) sum += std::abs(int{w[t]} - int{weight_zero});
      channel_bound[c] = std::max(channel_bound[c], sum);
    }
  }
  const std::int64_t x_max = std::max<std::int64_t>(x_zero, 255 - x_zero);
  std::vector<ChannelChunk> chunks;
  ChannelChunk current;
  std::int64_t bound = 0;
  for (std::int64_t c = 0; c < cin; ++c) {
    if (current.count > 0 && x_max * (bound + channel_bound[c]) > kFloatExactLimit) {
      chunks.push_back(current);
      current = ChannelChunk{c, 0};
      bound = 0;
    }
    bound += channel_bound[c];
    ++current.count;
  }
  chunks.push_back(current);
  return chunks;
}

FloatConvForm preferred_float_conv_form() {
  return cpu_simd_level() == SimdLevel::kAvx2 ? FloatConvForm::kBackwardData
                                              : FloatConvForm::kForward;
}

at::Tensor exact_float_conv(const std::uint8_t* x, std::int64_t pixel_stride, std::uint8_t x_zero,
                            const std::int8_t* weight, std::int8_t weight_zero,
                            const ConvGeometry& g, FloatConvForm form) {
  LPDT_CHECK(g.groups == 1, "exact_float_conv: dense convolutions only");
  LPDT_CHECK(exact_float_conv_available(),
             "exact_float_conv needs a LibTorch built with oneDNN (mkldnn)");
  const std::int64_t cin = g.in_channels, cout = g.out_channels, taps = g.kernel * g.kernel;
  const std::int64_t pixels = g.batch * g.height * g.width, n = g.positions();
  const std::vector<ChannelChunk> chunks = exact_float_conv_chunks(weight, weight_zero, x_zero, g);
  const auto channels_last =
      at::TensorOptions().dtype(at::kFloat).memory_format(at::MemoryFormat::ChannelsLast);
  at::Tensor acc;  // [positions, Cout] int32, with several chunks
  for (std::size_t j = 0; j < chunks.size(); ++j) {
    const ChannelChunk chunk = chunks[j];
    // Real activations q_x - z_x of the chunk's channels, channels-last, one pass over the codes.
    at::Tensor x_real = at::empty({g.batch, chunk.count, g.height, g.width}, channels_last);
    float* real = x_real.data_ptr<float>();
    at::parallel_for(0, pixels, 512, [&](std::int64_t begin, std::int64_t end) {
      codes_to_real(x + begin * pixel_stride + chunk.first, pixel_stride, chunk.count,
                    static_cast<float>(x_zero), end - begin, real + begin * chunk.count);
    });
    const bool backward_data =
        form == FloatConvForm::kBackwardData &&
        same_conv_by_backward_data_handles(x_real, chunk.count, cout, g.kernel, g.stride, g.padding,
                                           /*groups=*/1, /*bias=*/false);
    // Real weights w - z_w = (q_w - 128) - (z_w - 128): integers in [-255, 255]; for the
    // backward-data form written as W'[c, o] = W[o, c] with the taps reversed, which on a
    // kernel x kernel window is the 180-degree rotation.
    at::Tensor w_real = backward_data
                            ? at::empty({chunk.count, cout, g.kernel, g.kernel}, at::kFloat)
                            : at::empty({cout, chunk.count, g.kernel, g.kernel}, at::kFloat);
    float* wr = w_real.data_ptr<float>();
    for (std::int64_t o = 0; o < cout; ++o) {
      const std::int8_t* w = weight + (o * cin + chunk.first) * taps;
      for (std::int64_t c = 0; c < chunk.count; ++c) {
        for (std::int64_t t = 0; t < taps; ++t) {
          const float value = static_cast<float>(int{w[c * taps + t]} - int{weight_zero});
          if (backward_data) {
            wr[(c * cout + o) * taps + (taps - 1 - t)] = value;
          } else {
            wr[(o * chunk.count + c) * taps + t] = value;
          }
        }
      }
    }
    const at::Tensor sum =
        (backward_data ? same_conv2d_forward_by_backward_data(x_real, w_real, g.padding)
                       : at::mkldnn_convolution(x_real, w_real, /*bias=*/{}, {g.padding, g.padding},
                                                {g.stride, g.stride}, {1, 1}, /*groups=*/1))
            .contiguous(at::MemoryFormat::ChannelsLast);
    // [b, Cout, Ho, Wo] channels-last is [positions, Cout] in memory.
    if (chunks.size() == 1) return sum.permute({0, 2, 3, 1}).reshape({n, cout});
    if (j == 0) acc = at::empty({n, cout}, at::kInt);
    const float* s = sum.data_ptr<float>();
    std::int32_t* a = acc.data_ptr<std::int32_t>();
    at::parallel_for(0, n * cout, 4096, [&](std::int64_t begin, std::int64_t end) {
      if (j == 0) {
        for (std::int64_t i = begin; i < end; ++i) a[i] = static_cast<std::int32_t>(s[i]);
      } else {
        for (std::int64_t i = begin; i < end; ++i) a[i] += static_cast<std::int32_t>(s[i]);
      }
    });
  }
  return acc;
}

void exact_float_conv_s32(const std::uint8_t* x, std::int64_t pixel_stride, std::uint8_t x_zero,
                          const std::int8_t* weight, std::int8_t weight_zero, const ConvGeometry& g,
                          std::int32_t* acc, FloatConvForm form) {
  const at::Tensor sums = exact_float_conv(x, pixel_stride, x_zero, weight, weight_zero, g, form);
  at::from_blob(acc, sums.sizes(), at::TensorOptions().dtype(at::kInt)).copy_(sums);
}

}  // namespace lpdt::quant
