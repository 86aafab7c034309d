#include "lpdt/quant/exact_float_conv.h"

#include <ATen/ATen.h>
#include <ATen/Config.h>
#include <ATen/Parallel.h>

#include <algorithm>

#include "lpdt/core/error.h"
#include "lpdt/quant/int8_gemm.h"

namespace lpdt::quant {

bool exact_float_conv_available() { return AT_MKLDNN_ENABLED() != 0; }

std::int64_t exact_float_conv_chunk(std::int64_t kernel) {
  LPDT_CHECK(kernel >= 1 && kernel * kernel <= kExactFloatChunk, "exact_float_conv: kernel");
  return kExactFloatChunk / (kernel * kernel);
}

void exact_float_conv_s32(const std::uint8_t* x, std::int64_t pixel_stride, std::uint8_t x_zero,
                          const std::int8_t* weight, std::int8_t weight_zero, const ConvGeometry& g,
                          std::int32_t* acc) {
  LPDT_CHECK(g.groups == 1, "exact_float_conv_s32: dense convolutions only");
  LPDT_CHECK(exact_float_conv_available(),
             "exact_float_conv_s32 needs a LibTorch built with oneDNN (mkldnn)");
  const std::int64_t cin = g.in_channels, cout = g.out_channels, b = g.batch;
  const auto int8_options = at::TensorOptions().dtype(at::kChar);
  const auto float_options = at::TensorOptions().dtype(at::kFloat);
  // Real weights w - z_w = (q_w - 128) - (z_w - 128): integers in [-255, 255].
  const at::Tensor w_real =
      at::from_blob(const_cast<std::int8_t*>(weight), {cout, cin, g.kernel, g.kernel}, int8_options)
          .to(at::kFloat) -
      static_cast<float>(weight_zero);
  // The node's codes [b, Cin, H, W] as a channels-last view with its pixel stride.
  const at::Tensor codes =
      at::from_blob(const_cast<std::uint8_t*>(x), {b, cin, g.height, g.width},
                    {g.height * g.width * pixel_stride, 1, g.width * pixel_stride, pixel_stride},
                    at::TensorOptions().dtype(at::kByte));
  // Real activations q_x - z_x, channels-last, one pass over the codes.
  at::Tensor x_real = at::empty({b, cin, g.height, g.width},
                                float_options.memory_format(at::MemoryFormat::ChannelsLast));
  x_real.copy_(codes).sub_(static_cast<float>(x_zero));
  const std::int64_t chunk = exact_float_conv_chunk(g.kernel);
  const std::int64_t chunks = (cin + chunk - 1) / chunk;
  const std::int64_t n = g.positions();
  at::Tensor sum;  // [b, Cout, Ho, Wo] float channels-last: the chunk's exact integer sums
  for (std::int64_t j = 0; j < chunks; ++j) {
    // Equal chunks (e.g. 64 channels of 3x3 as 22 + 21 + 21), each at most `chunk`.
    const std::int64_t first = j * cin / chunks, count = (j + 1) * cin / chunks - first;
    at::Tensor x_chunk = x_real.narrow(1, first, count);
    if (chunks > 1) x_chunk = x_chunk.contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor w_chunk = w_real.narrow(1, first, count).contiguous();
    sum = at::mkldnn_convolution(x_chunk, w_chunk, /*bias=*/{}, {g.padding, g.padding},
                                 {g.stride, g.stride}, {1, 1}, /*groups=*/1)
              .contiguous(at::MemoryFormat::ChannelsLast);
    // [b, Cout, Ho, Wo] channels-last is [positions, Cout] in memory.
    const float* s = sum.data_ptr<float>();
    at::parallel_for(0, n * cout, 4096, [&](std::int64_t begin, std::int64_t end) {
      if (j == 0) {
        for (std::int64_t i = begin; i < end; ++i) acc[i] = static_cast<std::int32_t>(s[i]);
      } else {
        for (std::int64_t i = begin; i < end; ++i) acc[i] += static_cast<std::int32_t>(s[i]);
      }
    });
  }
}

}  // namespace lpdt::quant
