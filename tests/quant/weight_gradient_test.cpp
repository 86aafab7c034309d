// Weight gradients at quant.weight_grad's precision: the bfloat16 form against a float64
// reference on bfloat16-rounded inputs, and, through both backends' layers, weight gradients
// that are bfloat16 values close to the float32 ones while the layer gradients stay the same.
#include "lpdt/quant/weight_gradient.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "lpdt/quant/gradient_bifurcation.h"
#include "lpdt/quant/int8_gemm.h"
#include "lpdt/quant/integer_layers.h"

namespace lpdt::quant {
namespace {

double relative_max_error(const at::Tensor& actual, const at::Tensor& expected) {
  return ((actual.to(at::kDouble) - expected.to(at::kDouble)).abs().max() /
          (expected.to(at::kDouble).abs().max() + 1e-30))
      .item<double>();
}

bool all_bfloat16_values(const at::Tensor& t) {
  return at::equal(t, t.to(at::kBFloat16).to(at::kFloat));
}

at::Tensor rounded_to_bfloat16(const at::Tensor& t) { return t.to(at::kBFloat16).to(at::kDouble); }

TEST(WeightGradient, ConvolutionInBfloat16MatchesAReferenceOnRoundedInputs) {
  torch::manual_seed(3);
  for (const std::int64_t groups : {1, 2}) {
    const at::Tensor x = torch::randn({4, 6, 9, 7}).contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor w = torch::randn({8, 6 / groups, 3, 3});
    const at::Tensor gy =
        torch::randn({4, 8, 5, 4}).contiguous(at::MemoryFormat::ChannelsLast);  // stride 2
    const at::Tensor fp32 = conv_weight_gradient(gy, x, w, 2, 1, groups, WeightGrad::kFp32);
    const at::Tensor bf16 = conv_weight_gradient(gy, x, w, 2, 1, groups, WeightGrad::kBf16);
    ASSERT_EQ(bf16.scalar_type(), at::kFloat);
    ASSERT_EQ(bf16.sizes(), w.sizes());
    auto [unused_x, expected_fp32, unused_b] =
        at::convolution_backward(gy, x, w, c10::nullopt, {2, 2}, {1, 1}, {1, 1}, false, {0, 0},
                                 groups, {false, true, false});
    EXPECT_TRUE(at::equal(fp32, expected_fp32)) << "groups " << groups;
    // The exact gradient of the bfloat16-rounded inputs, rounded once more to bfloat16: within
    // half a bfloat16 unit (2^-9 relative) plus float32 summation error.
    auto [unused_x64, reference, unused_b64] = at::convolution_backward(
        rounded_to_bfloat16(gy), rounded_to_bfloat16(x), w.to(at::kDouble), c10::nullopt, {2, 2},
        {1, 1}, {1, 1}, false, {0, 0}, groups, {false, true, false});
    EXPECT_TRUE(all_bfloat16_values(bf16)) << "groups " << groups;
    EXPECT_LT(relative_max_error(bf16, reference), 1.0 / 256) << "groups " << groups;
    EXPECT_FALSE(at::equal(bf16, fp32)) << "groups " << groups;
  }
}

TEST(WeightGradient, LinearInBfloat16MatchesAReferenceOnRoundedInputs) {
  torch::manual_seed(4);
  const at::Tensor gy = torch::randn({3, 16, 5}), x = torch::randn({3, 16, 7});
  const at::Tensor fp32 = linear_weight_gradient(gy, x, WeightGrad::kFp32);
  const at::Tensor bf16 = linear_weight_gradient(gy, x, WeightGrad::kBf16);
  ASSERT_EQ(bf16.sizes(), (std::vector<std::int64_t>{3, 5, 7}));
  EXPECT_TRUE(at::equal(fp32, at::bmm(gy.transpose(1, 2), x)));
  const at::Tensor reference =
      at::bmm(rounded_to_bfloat16(gy).transpose(1, 2), rounded_to_bfloat16(x));
  EXPECT_TRUE(all_bfloat16_values(bf16));
  EXPECT_LT(relative_max_error(bf16, reference), 1.0 / 256);
}

struct LayerGradients {
  at::Tensor x, w, b;
};

QuantizeRequest stochastic_request(std::uint64_t seed) {
  return QuantizeRequest{8, QuantScheme::kGemmlowp, Rounding::kStochastic, DrawKey{seed, 0, 0}, 0};
}

// One 2-node convolution layer of either backend, forward and backward with a fixed output
// gradient and fixed draws.
LayerGradients convolution_gradients(QuantBackend backend, WeightGrad weight_grad) {
  torch::manual_seed(5);
  const std::int64_t k = 2;
  ConvGeometry g;
  g.batch = 3, g.in_channels = 4, g.out_channels = 6, g.height = 8, g.width = 8;
  g.kernel = 3, g.stride = 1, g.padding = 1;
  const at::Tensor x_values = torch::randn({g.batch, k * g.in_channels, g.height, g.width})
                                  .contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor w_values = torch::randn({k, g.out_channels, g.in_channels, 3, 3});
  const at::Tensor b_values = torch::randn({k * g.out_channels});
  const at::Tensor gy = torch::randn({g.batch, k * g.out_channels, g.height, g.width})
                            .contiguous(at::MemoryFormat::ChannelsLast);
  const QuantizeRequest nearest{8, QuantScheme::kGemmlowp, Rounding::kNearest, DrawKey{1, 0, 0}, 0};
  const QuantizedTensor qx = quantize(x_values, k, tensor_range(x_values, k), nearest);
  const QuantizedTensor qw = quantize(w_values, k, tensor_range(w_values, k), nearest);
  at::Tensor x = x_values.clone().requires_grad_(), w = w_values.clone().requires_grad_(),
             b = b_values.clone().requires_grad_();
  at::Tensor y;
  if (backend == QuantBackend::kInteger) {
    y = integer_conv2d(x, qx, w, qw, b, g, k, stochastic_request(7), weight_grad);
  } else {
    // The same function on the dequantized codes, with the weights as one grouped tensor.
    const at::Tensor x_real = dequantize(qx, k).detach().requires_grad_();
    const at::Tensor w_real =
        dequantize(qw, k).view({k * g.out_channels, g.in_channels, 3, 3}).detach().requires_grad_();
    y = bifurcated_conv2d(x_real, w_real, b, 1, 1, k, stochastic_request(7), 1, weight_grad);
    y.backward(gy);
    return {x_real.grad(), w_real.grad().view(w.sizes()), b.grad()};
  }
  y.backward(gy);
  return {x.grad(), w.grad(), b.grad()};
}

TEST(WeightGradient, LayersOfBothBackendsRoundOnlyTheWeightGradient) {
  for (const QuantBackend backend : {QuantBackend::kSimulated, QuantBackend::kInteger}) {
    if (backend == QuantBackend::kInteger && !have_int8_gemm()) continue;
    const LayerGradients fp32 = convolution_gradients(backend, WeightGrad::kFp32);
    const LayerGradients bf16 = convolution_gradients(backend, WeightGrad::kBf16);
    const std::string name = to_string(backend);
    EXPECT_TRUE(all_bfloat16_values(bf16.w)) << name;
    EXPECT_FALSE(all_bfloat16_values(fp32.w)) << name;
    // Two roundings of the inputs to bfloat16 and one of the sum: well within 2%.
    EXPECT_LT(relative_max_error(bf16.w, fp32.w), 0.02) << name;
    // The layer gradient (8 bits, the same draws) and the float32 bias gradient are unchanged.
    EXPECT_TRUE(at::equal(bf16.x, fp32.x)) << name;
    EXPECT_LT(relative_max_error(bf16.b, fp32.b), 1e-6) << name;
  }
}

}  // namespace
}  // namespace lpdt::quant
