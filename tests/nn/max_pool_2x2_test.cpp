// nn::max_pool_2x2 against LibTorch's max_pool2d on random inputs: the same tensor bit for bit
// (NaN, signed zeros and ties included), the same memory format, odd sizes, and the cases it
// leaves to LibTorch.
#include "lpdt/nn/max_pool_2x2.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <limits>

namespace lpdt::nn {
namespace {

// Equal bit patterns (so -0 differs from +0, and NaN equals a NaN of the same bits).
bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() &&
         torch::equal(a.contiguous().view(at::kInt), b.contiguous().view(at::kInt));
}

// Values drawn from a few levels, so that windows hold ties, with zeros of both signs and NaN.
at::Tensor awkward_input(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  at::Tensor x = torch::randint(-3, 4, {n, c, h, w}).to(at::kFloat) * 0.5;
  const at::Tensor pick = torch::rand({n, c, h, w});
  x = torch::where(pick < 0.05, torch::full_like(x, -0.0), x);
  x = torch::where(pick > 0.97, torch::full_like(x, std::numeric_limits<float>::quiet_NaN()), x);
  return x.contiguous(at::MemoryFormat::ChannelsLast);
}

TEST(MaxPool2x2, EqualsLibTorchBitForBit) {
  torch::manual_seed(5);
  torch::NoGradGuard no_grad;
  for (const auto& shape : std::vector<std::vector<std::int64_t>>{
           {3, 6, 28, 28},
           {2, 96, 10, 10},
           {1, 1, 5, 7},
           {2, 17, 9, 4},
           {4, 16, 2, 2},
           {1, 33, 3, 3}}) {
    const at::Tensor x = awkward_input(shape[0], shape[1], shape[2], shape[3]);
    ASSERT_TRUE(max_pool_2x2_takes_kernel(x));
    const at::Tensor ours = max_pool_2x2(x);
    const at::Tensor theirs = at::max_pool2d(x, {2, 2}, {2, 2});
    EXPECT_TRUE(same_bits(ours, theirs)) << x.sizes();
    EXPECT_TRUE(ours.is_contiguous(at::MemoryFormat::ChannelsLast)) << x.sizes();
    EXPECT_TRUE(theirs.is_contiguous(at::MemoryFormat::ChannelsLast)) << x.sizes();
  }
  // Random normal values, one image per node of a grouped pass (channels-last over 16 x 6).
  const at::Tensor x = torch::randn({32, 96, 28, 28}).contiguous(at::MemoryFormat::ChannelsLast);
  EXPECT_TRUE(same_bits(max_pool_2x2(x), at::max_pool2d(x, {2, 2}, {2, 2})));
}

TEST(MaxPool2x2, LeavesOtherCasesToLibTorch) {
  torch::manual_seed(6);
  // Stored NCHW: LibTorch's kernel, the same result.
  const at::Tensor nchw = torch::randn({2, 6, 8, 8});
  EXPECT_FALSE(max_pool_2x2_takes_kernel(nchw));
  EXPECT_TRUE(same_bits(max_pool_2x2(nchw), at::max_pool2d(nchw, {2, 2}, {2, 2})));
  // A gradient asked for: LibTorch's, whose indices its backward needs.
  const at::Tensor x =
      torch::randn({2, 6, 8, 8}).contiguous(at::MemoryFormat::ChannelsLast).requires_grad_(true);
  EXPECT_FALSE(max_pool_2x2_takes_kernel(x));
  const at::Tensor y = max_pool_2x2(x);
  EXPECT_TRUE(y.requires_grad());
  y.sum().backward();
  EXPECT_DOUBLE_EQ(x.grad().sum().item<double>(), static_cast<double>(y.numel()));
  {
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(max_pool_2x2_takes_kernel(x));
  }
  // Other dtypes, and a side under 2, are LibTorch's (its error for the latter).
  EXPECT_FALSE(max_pool_2x2_takes_kernel(
      torch::randn({1, 2, 4, 4}, at::kDouble).contiguous(at::MemoryFormat::ChannelsLast)));
  EXPECT_FALSE(max_pool_2x2_takes_kernel(
      torch::randn({1, 2, 1, 4}).contiguous(at::MemoryFormat::ChannelsLast)));
}

}  // namespace
}  // namespace lpdt::nn
