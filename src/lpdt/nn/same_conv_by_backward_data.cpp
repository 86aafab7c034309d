#include "lpdt/nn/same_conv_by_backward_data.h"

#include <ATen/ATen.h>
#include <ATen/Config.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/core/error.h"

namespace lpdt::nn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// y of the header's equation: the input gradient, for output gradient x, of the convolution
// with weights W'. `shape` only gives the result's sizes and memory format to
// at::convolution_backward (its data is never read).
at::Tensor backward_data_form(const at::Tensor& x, const at::Tensor& weight,
                              std::int64_t padding) {
  const at::Tensor rotated = transposed_rotated_weight(weight);
  const at::Tensor shape =
      at::empty({x.size(0), weight.size(0), x.size(2), x.size(3)},
                x.options().memory_format(at::MemoryFormat::ChannelsLast));
  return std::get<0>(at::convolution_backward(x, shape, rotated, c10::nullopt, {1, 1},
                                              {padding, padding}, {1, 1}, false, {0, 0}, 1,
                                              {true, false, false}));
}

struct SameConvByBackwardData : torch::autograd::Function<SameConvByBackwardData> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            std::int64_t padding) {
    RECORD_FUNCTION("lpdt::same_conv2d_by_backward_data", std::vector<c10::IValue>());
    ctx->save_for_backward({x, weight});
    ctx->saved_data["padding"] = padding;
    return backward_data_form(x, weight, padding);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto saved = ctx->get_saved_variables();
    const std::int64_t padding = ctx->saved_data["padding"].toInt();
    // What autograd runs for at::conv2d (ConvolutionBackward0), for the gradients asked for.
    auto [grad_x, grad_w, unused_bias] = at::convolution_backward(
        grad[0].contiguous(at::MemoryFormat::ChannelsLast), saved[0], saved[1], c10::nullopt,
        {1, 1}, {padding, padding}, {1, 1}, false, {0, 0}, 1,
        {ctx->needs_input_grad(0), ctx->needs_input_grad(1), false});
    return {grad_x, grad_w, at::Tensor()};
  }
};

}  // namespace

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
         same_conv_by_backward_data_handles(x, in_channels, out_channels, kernel, stride,
                                            padding, groups, bias);
}

at::Tensor transposed_rotated_weight(const at::Tensor& weight) {
  LPDT_CHECK(weight.dim() == 4, "transposed_rotated_weight: weight [out, in, k, k]");
  return weight.transpose(0, 1).flip({2, 3}).contiguous();
}

at::Tensor same_conv2d_by_backward_data(const at::Tensor& x, const at::Tensor& weight,
                                        std::int64_t padding) {
  LPDT_CHECK(same_conv_by_backward_data_handles(x, weight.size(1), weight.size(0),
                                                weight.size(2), 1, padding, 1, false) &&
                 weight.size(1) == x.size(1) && weight.size(2) == weight.size(3),
             "same_conv2d_by_backward_data: needs a float32 channels-last input, weights "
             "[out, in, k, k] with in = x's channels, 'same' padding and channels in 8s");
  return SameConvByBackwardData::apply(x, weight, padding);
}

}  // namespace lpdt::nn
