// The grouped strided convolution with the spread input gradient (nn/spread_grad_conv2d.h): its
// output and its input, weight and bias gradients against at::conv2d's autograd on random inputs,
// on the CPU (where the layers keep at::conv2d: this calls it directly).
#include "lpdt/nn/spread_grad_conv2d.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

namespace lpdt::nn {
namespace {

double max_error(const at::Tensor& got, const at::Tensor& expected) {
  return (got - expected).abs().max().item<double>() /
         (1.0 + expected.abs().max().item<double>());
}

TEST(SpreadGradConv2d, OutputAndGradientsEqualConv2d) {
  torch::manual_seed(5);
  const std::int64_t groups = 3, stride = 2, padding = 1;
  const at::Tensor x0 =
      torch::randn({4, groups * 2, 9, 9}).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor w0 = torch::randn({groups * 5, 2, 3, 3});
  const at::Tensor b0 = torch::randn({groups * 5});
  at::Tensor xa = x0.clone().requires_grad_(true), wa = w0.clone().requires_grad_(true),
             ba = b0.clone().requires_grad_(true);
  at::Tensor xb = x0.clone().requires_grad_(true), wb = w0.clone().requires_grad_(true),
             bb = b0.clone().requires_grad_(true);
  const at::Tensor expected =
      at::conv2d(xa, wa, ba, {stride, stride}, {padding, padding}, {1, 1}, groups);
  const at::Tensor got = conv2d_with_spread_input_grad(xb, wb, bb, stride, padding, groups);
  ASSERT_EQ(got.sizes(), expected.sizes());
  EXPECT_LT(max_error(got, expected), 1e-5);
  const at::Tensor gy = torch::randn(expected.sizes());
  expected.backward(gy);
  got.backward(gy);
  EXPECT_LT(max_error(xb.grad(), xa.grad()), 1e-4) << "input gradient";
  EXPECT_LT(max_error(wb.grad(), wa.grad()), 1e-4) << "weight gradient";
  EXPECT_LT(max_error(bb.grad(), ba.grad()), 1e-4) << "bias gradient";
}

// An input that needs no gradient (a first layer's images) gets none, and the weight's is still
// computed.
TEST(SpreadGradConv2d, SkipsTheInputGradientWhenNotNeeded) {
  torch::manual_seed(6);
  const at::Tensor x = torch::randn({2, 4, 8, 8});
  at::Tensor w = torch::randn({4, 2, 3, 3}).requires_grad_(true);
  conv2d_with_spread_input_grad(x, w, at::Tensor(), 2, 1, 2).sum().backward();
  EXPECT_FALSE(x.grad().defined());
  ASSERT_TRUE(w.grad().defined());
  at::Tensor w2 = w.detach().clone().requires_grad_(true);
  at::conv2d(x, w2, {}, {2, 2}, {1, 1}, {1, 1}, 2).sum().backward();
  EXPECT_LT(max_error(w.grad(), w2.grad()), 1e-4);
}

}  // namespace
}  // namespace lpdt::nn
