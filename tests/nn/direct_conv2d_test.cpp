// The fp32 layer's dense convolutions through oneDNN's primitives called directly
// (nn/direct_conv2d.h): output and gradients against autograd's through at::conv2d, to float
// rounding on random inputs (the primitives themselves are tested against plain loops in
// tests/core), and the layer taking it where it applies.
#include "lpdt/nn/direct_conv2d.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "lpdt/core/onednn_float_conv.h"
#include "lpdt/nn/conv2d.h"

namespace lpdt::nn {
namespace {

constexpr double kRoundingTolerance = 1e-5;  // relative to the largest value

struct DirectCase {
  std::int64_t in, out, kernel, stride, padding, side;
};

class DirectConv2d : public ::testing::TestWithParam<DirectCase> {};

double relative_difference(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>() / b.abs().max().item<double>();
}

TEST_P(DirectConv2d, EqualsConv2dAndItsGradients) {
  if (!onednn_float_conv_built()) GTEST_SKIP() << "built without oneDNN";
  const DirectCase c = GetParam();
  torch::manual_seed(17);
  const at::Tensor x0 =
      torch::randn({3, c.in, c.side, c.side}).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor w0 = torch::randn({c.out, c.in, c.kernel, c.kernel});
  const at::Tensor x_ref = x0.clone().requires_grad_(true), w_ref = w0.clone().requires_grad_(true);
  const at::Tensor y_ref =
      at::conv2d(x_ref, w_ref, {}, {c.stride, c.stride}, {c.padding, c.padding});
  const at::Tensor x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
  const at::Tensor y = direct_conv2d(x, w, c.stride, c.padding);
  ASSERT_EQ(y.sizes(), y_ref.sizes());
  EXPECT_LE(relative_difference(y, y_ref), kRoundingTolerance);

  const at::Tensor probe = torch::randn_like(y_ref);
  (y_ref * probe).sum().backward();
  (y * probe).sum().backward();
  EXPECT_LE(relative_difference(x.grad(), x_ref.grad()), kRoundingTolerance);
  EXPECT_LE(relative_difference(w.grad(), w_ref.grad()), kRoundingTolerance);
}

INSTANTIATE_TEST_SUITE_P(Shapes, DirectConv2d,
                         ::testing::Values(DirectCase{16, 16, 3, 1, 1, 9},
                                           DirectCase{16, 32, 3, 2, 1, 8},
                                           DirectCase{16, 32, 1, 2, 0, 8},
                                           DirectCase{1, 16, 3, 1, 1, 7},
                                           DirectCase{3, 5, 5, 2, 2, 11}));

// Only the input is needed by a frozen layer, only the weights by the first layer: each gradient
// alone is the same as both together.
TEST(DirectConv2dGradients, EachAloneAsBothTogether) {
  if (!onednn_float_conv_built()) GTEST_SKIP() << "built without oneDNN";
  torch::manual_seed(18);
  const at::Tensor x0 = torch::randn({2, 16, 8, 8}).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor w0 = torch::randn({16, 16, 3, 3});
  const at::Tensor probe = torch::randn({2, 16, 8, 8});
  const at::Tensor x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
  (direct_conv2d(x, w, 1, 1) * probe).sum().backward();
  const at::Tensor x_only = x0.clone().requires_grad_(true);
  (direct_conv2d(x_only, w0, 1, 1) * probe).sum().backward();
  const at::Tensor w_only = w0.clone().requires_grad_(true);
  (direct_conv2d(x0, w_only, 1, 1) * probe).sum().backward();
  EXPECT_TRUE(torch::equal(x_only.grad(), x.grad()));
  EXPECT_TRUE(torch::equal(w_only.grad(), w.grad()));
}

}  // namespace
}  // namespace lpdt::nn
