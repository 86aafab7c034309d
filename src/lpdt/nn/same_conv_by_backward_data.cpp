#include "lpdt/nn/same_conv_by_backward_data.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>

#include "lpdt/core/error.h"

namespace lpdt::nn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct SameConvByBackwardData : torch::autograd::Function<SameConvByBackwardData> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            std::int64_t padding) {
    RECORD_FUNCTION("lpdt::same_conv2d_by_backward_data", std::vector<c10::IValue>());
    ctx->save_for_backward({x, weight});
    ctx->saved_data["padding"] = padding;
    return same_conv2d_forward_by_backward_data(x, transposed_rotated_weight(weight), padding);
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
