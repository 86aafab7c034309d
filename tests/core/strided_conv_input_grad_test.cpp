// The input gradient of a strided convolution through the stride-1 convolution of the spread
// output gradient (core/strided_conv_input_grad.h), against autograd's gradient of at::conv2d on
// random inputs; and when the layers take it.
#include "lpdt/core/strided_conv_input_grad.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <ostream>

namespace lpdt {
namespace {

struct SpreadCase {
  std::int64_t batch, in, out, size, kernel, stride, padding, groups;
  bool channels_last;
};

void PrintTo(const SpreadCase& c, std::ostream* os) {
  *os << c.in << "->" << c.out << " " << c.size << "x" << c.size << " k" << c.kernel << " s"
      << c.stride << " p" << c.padding << " g" << c.groups << (c.channels_last ? " nhwc" : "");
}

class SpreadInputGrad : public ::testing::TestWithParam<SpreadCase> {};

TEST_P(SpreadInputGrad, EqualsAutogradOfConv2d) {
  const SpreadCase c = GetParam();
  torch::manual_seed(11);
  const at::MemoryFormat format =
      c.channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  at::Tensor x = torch::randn({c.batch, c.in, c.size, c.size}).contiguous(format);
  x.requires_grad_(true);
  const at::Tensor w = torch::randn({c.out, c.in / c.groups, c.kernel, c.kernel});
  const at::Tensor y = at::conv2d(x, w, {}, {c.stride, c.stride}, {c.padding, c.padding}, {1, 1},
                                  c.groups);
  const at::Tensor gy = torch::randn(y.sizes()).contiguous(format);
  y.backward(gy);
  const at::Tensor expected = x.grad();

  const at::Tensor got = strided_conv_input_grad_by_spread(gy, x.detach(), w, c.stride,
                                                           c.padding, c.groups);
  ASSERT_EQ(got.sizes(), expected.sizes());
  const double error = (got - expected).abs().max().item<double>();
  EXPECT_LT(error, 1e-4 * (1.0 + expected.abs().max().item<double>()));
  // The dispatcher takes the backend's own form on the CPU, with the same result.
  const at::Tensor dispatched = conv_input_grad(gy, x.detach(), w, c.stride, c.padding, c.groups);
  EXPECT_LT((dispatched - expected).abs().max().item<double>(),
            1e-4 * (1.0 + expected.abs().max().item<double>()));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SpreadInputGrad,
    ::testing::Values(
        // ResNet-20's transitions: 3x3 stride 2 and the 1x1 stride-2 shortcut, 4 nodes as groups.
        SpreadCase{3, 4 * 4, 4 * 8, 8, 3, 2, 1, 4, true},
        SpreadCase{3, 4 * 4, 4 * 8, 8, 1, 2, 0, 4, true},
        // Odd sizes (the last output does not reach the input's edge), stride 3, dense, NCHW.
        SpreadCase{2, 3, 5, 9, 3, 2, 1, 1, false}, SpreadCase{2, 6, 4, 11, 3, 3, 1, 2, false},
        SpreadCase{1, 4, 4, 7, 5, 2, 2, 4, false},
        // Stride 1: the spread is the gradient itself.
        SpreadCase{2, 4, 6, 6, 3, 1, 1, 2, true}));

TEST(SpreadInputGradApplies, OnlyToStridedGroupedLayersOnCuda) {
  const at::Tensor x = torch::zeros({2, 8, 8, 8});
  EXPECT_FALSE(input_grad_by_spread_applies(x, 2, 4)) << "a CPU tensor";
  if (torch::cuda::is_available()) {
    const at::Tensor on_gpu = x.cuda();
    EXPECT_TRUE(input_grad_by_spread_applies(on_gpu, 2, 4));
    EXPECT_FALSE(input_grad_by_spread_applies(on_gpu, 1, 4)) << "stride 1";
    EXPECT_FALSE(input_grad_by_spread_applies(on_gpu, 2, 1)) << "one group";
    EXPECT_FALSE(input_grad_by_spread_applies(on_gpu, 2, 8)) << "depthwise";
  }
}

}  // namespace
}  // namespace lpdt
