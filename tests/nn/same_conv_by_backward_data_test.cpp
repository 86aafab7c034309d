// The fp32 layer's backward-data form of a stride-1 "same" convolution
// (nn/same_conv_by_backward_data.h): its output against at::conv2d to float rounding on random
// inputs, its gradients bit for bit those autograd computes for at::conv2d, and the layer's
// choice. The form itself (weights, shapes) is tested in tests/core.
#include "lpdt/nn/same_conv_by_backward_data.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "lpdt/core/error.h"
#include "lpdt/core/onednn_float_conv.h"
#include "lpdt/nn/conv2d.h"
#include "lpdt/nn/direct_conv2d.h"

namespace lpdt::nn {
namespace {

// Relative to the output's scale: the two kernels add the same products in other orders.
constexpr double kRoundingTolerance = 1e-5;

struct SameCase {
  std::int64_t in, out, kernel, side;
};

class SameConvByBackwardData : public ::testing::TestWithParam<SameCase> {};

TEST_P(SameConvByBackwardData, EqualsConv2dAndItsGradients) {
  const SameCase c = GetParam();
  const std::int64_t padding = (c.kernel - 1) / 2;
  torch::manual_seed(7);
  const at::Tensor x0 =
      torch::randn({3, c.in, c.side, c.side}).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor w0 = torch::randn({c.out, c.in, c.kernel, c.kernel});
  ASSERT_TRUE(same_conv_by_backward_data_handles(x0, c.in, c.out, c.kernel, 1, padding, 1, false));

  const at::Tensor x_ref = x0.clone().requires_grad_(true), w_ref = w0.clone().requires_grad_(true);
  const at::Tensor y_ref = at::conv2d(x_ref, w_ref, {}, {1, 1}, {padding, padding});
  const at::Tensor x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
  const at::Tensor y = same_conv2d_by_backward_data(x, w, padding);

  ASSERT_EQ(y.sizes(), y_ref.sizes());
  EXPECT_TRUE(y.is_contiguous(at::MemoryFormat::ChannelsLast));
  const double scale = y_ref.abs().max().item<double>();
  EXPECT_LE((y - y_ref).abs().max().item<double>(), kRoundingTolerance * scale);

  const at::Tensor probe = torch::randn_like(y_ref);
  (y_ref * probe).sum().backward();
  (y * probe).sum().backward();
  EXPECT_TRUE(torch::equal(x.grad(), x_ref.grad()));
  EXPECT_TRUE(torch::equal(w.grad(), w_ref.grad()));
}

INSTANTIATE_TEST_SUITE_P(Shapes, SameConvByBackwardData,
                         ::testing::Values(SameCase{16, 16, 3, 9}, SameCase{8, 24, 3, 6},
                                           SameCase{32, 8, 5, 7}, SameCase{16, 8, 1, 5}));

TEST(SameConvByBackwardDataShapes, RefusesWhatTheFormDoesNotHandle) {
  const at::Tensor x = torch::zeros({2, 16, 8, 8}).contiguous(at::MemoryFormat::ChannelsLast);
  EXPECT_THROW(same_conv2d_by_backward_data(x, torch::zeros({16, 16, 3, 3}), 0), InternalError);
  EXPECT_THROW(same_conv2d_by_backward_data(x, torch::zeros({16, 8, 3, 3}), 1), InternalError);
}

// The fp32 layer runs the backward-data form exactly where it applies on this CPU (bit for bit
// its output), and otherwise oneDNN's primitives directly (nn/direct_conv2d.h) or at::conv2d.
TEST(SameConvByBackwardDataLayer, Conv2dTakesTheFormWhereItApplies) {
  Registry registry;
  Conv2d conv(registry, "conv", Conv2dOptions{16, 16, 3}.with_padding(1));
  torch::manual_seed(11);
  const at::Tensor params = torch::randn({1, registry.layout().total_numel});
  const at::Tensor x = torch::randn({2, 16, 6, 6}).contiguous(at::MemoryFormat::ChannelsLast);
  Context ctx{&registry.layout(), params, nullptr, 1, false, ConvAlgorithm::kGrouped};
  const at::Tensor y = conv.forward(ctx, x);
  const at::Tensor w = params[0].reshape({16, 16, 3, 3});
  const at::Tensor expected =
      same_conv_by_backward_data_applies(x, 16, 16, 3, 1, 1, 1, false)
          ? same_conv2d_by_backward_data(x, w, 1)
      : onednn_float_conv_applies(x, 1, false) ? direct_conv2d(x, w, 1, 1)
                                               : at::conv2d(x, w, {}, {1, 1}, {1, 1});
  EXPECT_TRUE(torch::equal(y, expected));
}

}  // namespace
}  // namespace lpdt::nn
