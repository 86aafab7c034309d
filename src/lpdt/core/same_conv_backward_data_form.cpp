#include "lpdt/core/same_conv_backward_data_form.h"

#include <ATen/ATen.h>
#include <ATen/Config.h>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"

namespace lpdt {

bool same_conv_by_backward_data_handles(const at::Tensor& x, std::int64_t in_channels,
                                        std::int64_t out_channels, std::int64_t kernel,
                                        std::int64_t stride, std::int64_t padding,
                                        std::int64_t groups, bool bias) {
  constexpr std::int64_t kChannelBlock = 8;
  return AT_MKLDNN_ENABLED() && x.device().is_cpu() && x.scalar_type() == at::kFloat &&
         x.dim() == 4 && x.is_contiguous(at::MemoryFormat::ChannelsLast) && groups == 1 &&
         stride == 1 && 2 * padding == kernel - 1 && !bias && in_channels % kChannelBlock == 0 &&
         out_channels % kChannelBlock == 0;
}

bool same_conv_by_backward_data_applies(const at::Tensor& x, std::int64_t in_channels,
                                        std::int64_t out_channels, std::int64_t kernel,
                                        std::int64_t stride, std::int64_t padding,
                                        std::int64_t groups, bool bias) {
  return cpu_simd_level() == SimdLevel::kAvx2 &&
         same_conv_by_backward_data_handles(x, in_channels, out_channels, kernel, stride, padding,
                                            groups, bias);
}

at::Tensor transposed_rotated_weight(const at::Tensor& weight) {
  LPDT_CHECK(weight.dim() == 4, "transposed_rotated_weight: weight [out, in, k, k]");
  return weight.transpose(0, 1).flip({2, 3}).contiguous();
}

at::Tensor same_conv2d_forward_by_backward_data(const at::Tensor& x,
                                                const at::Tensor& rotated_weight,
                                                std::int64_t padding) {
  LPDT_CHECK(
      rotated_weight.dim() == 4 && rotated_weight.size(0) == x.size(1) &&
          rotated_weight.size(2) == rotated_weight.size(3) &&
          same_conv_by_backward_data_handles(x, rotated_weight.size(0), rotated_weight.size(1),
                                             rotated_weight.size(2), 1, padding, 1, false),
      "same_conv2d_forward_by_backward_data: needs a float32 channels-last input, "
      "weights W' [in, out, k, k] with in = x's channels, 'same' padding and channels in 8s");
  // `shape` only gives the result's sizes and memory format to at::convolution_backward (its data
  // is never read).
  const at::Tensor shape = at::empty({x.size(0), rotated_weight.size(1), x.size(2), x.size(3)},
                                     x.options().memory_format(at::MemoryFormat::ChannelsLast));
  return std::get<0>(at::convolution_backward(x, shape, rotated_weight, c10::nullopt, {1, 1},
                                              {padding, padding}, {1, 1}, false, {0, 0}, 1,
                                              {true, false, false}));
}

}  // namespace lpdt
