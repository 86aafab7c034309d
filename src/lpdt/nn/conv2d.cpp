#include "lpdt/nn/conv2d.h"

#include <cmath>
#include <string>

#include "lpdt/core/error.h"
#include "lpdt/core/onednn_float_conv.h"
#include "lpdt/core/strided_conv_input_grad.h"
#include "lpdt/nn/direct_conv2d.h"
#include "lpdt/nn/same_conv_by_backward_data.h"
#include "lpdt/nn/spread_grad_conv2d.h"

namespace lpdt::nn {

ConvParams add_conv_params(Registry& registry, const std::string& name,
                           const Conv2dOptions& options) {
  if (options.groups < 1 || options.in_channels % options.groups != 0 ||
      options.out_channels % options.groups != 0) {
    throw ConfigError(
        "convolution '" + name + "': groups = " + std::to_string(options.groups) +
        " must be >= 1 and divide in_channels = " + std::to_string(options.in_channels) +
        " and out_channels = " + std::to_string(options.out_channels));
  }
  ConvParams params;
  const std::int64_t fan_out =
      options.kernel * options.kernel * options.out_channels / options.groups;
  const double std = std::sqrt(2.0 / static_cast<double>(fan_out));
  params.weight = registry.add_param(
      join_name(name, "weight"),
      {options.out_channels, options.in_channels / options.groups, options.kernel, options.kernel},
      ParamInit::normal(std));
  if (options.bias) {
    params.bias =
        registry.add_param(join_name(name, "bias"), {options.out_channels}, ParamInit::zeros());
  }
  return params;
}

Conv2d::Conv2d(Registry& registry, const std::string& name, const Conv2dOptions& options)
    : options_(options) {
  const ConvParams params = add_conv_params(registry, name, options);
  weight_ = params.weight;
  bias_ = params.bias;
}

namespace {

// Rounded to the convolution's arithmetic (bfloat16 or unchanged); undefined stays undefined.
at::Tensor operand(const at::Tensor& t, bool bfloat16) {
  return bfloat16 && t.defined() ? t.to(at::kBFloat16) : t;
}

}  // namespace

at::Tensor Conv2d::forward(const Context& ctx, const at::Tensor& x) const {
  if (options_.bfloat16) return forward_in(ctx, operand(x, true)).to(at::kFloat);
  return forward_in(ctx, x);
}

at::Tensor Conv2d::forward_in(const Context& ctx, const at::Tensor& x) const {
  const bool bf16 = options_.bfloat16;
  const std::int64_t k = ctx.k;
  if (ctx.conv_algorithm == ConvAlgorithm::kPerNode && k > 1) {
    const at::Tensor weights = operand(ctx.param(weight_), bf16);  // [k, out, in/G, kh, kw]
    const at::Tensor biases = options_.bias ? operand(ctx.param(bias_), bf16) : at::Tensor();
    std::vector<at::Tensor> outputs;
    outputs.reserve(k);
    for (std::int64_t i = 0; i < k; ++i) {
      // Node i's channel slice, made dense in the input's memory format for oneDNN.
      const at::Tensor xi = x.narrow(1, i * options_.in_channels, options_.in_channels)
                                .contiguous(x.suggest_memory_format());
      // The kernels a one-node pass takes (below), so that both sum in the same order.
      if (onednn_float_conv_applies(xi, options_.groups, options_.bias)) {
        outputs.push_back(direct_conv2d(xi, weights[i], options_.stride, options_.padding));
        continue;
      }
      outputs.push_back(at::conv2d(xi, weights[i].contiguous(x.suggest_memory_format()),
                                   options_.bias ? biases[i] : at::Tensor(),
                                   {options_.stride, options_.stride},
                                   {options_.padding, options_.padding}, {1, 1}, options_.groups));
    }
    return at::cat(outputs, 1).contiguous(x.suggest_memory_format());
  }
  // [k, out, in/G, kh, kw] -> [k*out, in/G, kh, kw]: groups k*G, node-major, so group
  // i*G + g convolves node i's channel group g only.
  const at::Tensor weight =
      operand(ctx.param(weight_), bf16)
          .reshape({k * options_.out_channels, options_.in_channels / options_.groups,
                    options_.kernel, options_.kernel});
  at::Tensor bias;
  if (options_.bias) bias = operand(ctx.param(bias_), bf16).reshape({k * options_.out_channels});
  if (!bf16 && k == 1 &&
      same_conv_by_backward_data_applies(x, options_.in_channels, options_.out_channels,
                                         options_.kernel, options_.stride, options_.padding,
                                         options_.groups, options_.bias)) {
    return same_conv2d_by_backward_data(x, weight, options_.padding);
  }
  // One dense convolution on the CPU: oneDNN's primitives called directly (faster than
  // LibTorch's wrapping of the same kernels; core/onednn_float_conv.h), in float32 or bfloat16.
  if (onednn_float_conv_applies(x, k * options_.groups, options_.bias)) {
    return direct_conv2d(x, weight, options_.stride, options_.padding);
  }
  if (input_grad_by_spread_applies(x, options_.stride, k * options_.groups)) {
    return conv2d_with_spread_input_grad(x, weight, bias, options_.stride, options_.padding,
                                         k * options_.groups);
  }
  return at::conv2d(x, weight, bias, {options_.stride, options_.stride},
                    {options_.padding, options_.padding}, {1, 1}, k * options_.groups);
}

}  // namespace lpdt::nn
