// The backward-data form of a stride-1 "same" convolution (core/same_conv_backward_data_form.h):
// the rotated, channel-swapped weights element by element, its output against at::conv2d to float
// rounding and, on integer-valued inputs whose sums stay within 2^24, bit for bit; and which
// shapes it takes.
#include "lpdt/core/same_conv_backward_data_form.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "lpdt/core/error.h"

namespace lpdt {
namespace {

// W'[c, o, u, v] = W[o, c, k-1-u, k-1-v], element by element.
TEST(SameConvByBackwardDataWeights, AreTransposedAndRotated) {
  torch::manual_seed(3);
  const at::Tensor w = torch::randn({4, 2, 3, 3});
  const at::Tensor t = transposed_rotated_weight(w);
  ASSERT_EQ(t.sizes(), (std::vector<std::int64_t>{2, 4, 3, 3}));
  for (std::int64_t o = 0; o < 4; ++o)
    for (std::int64_t c = 0; c < 2; ++c)
      for (std::int64_t u = 0; u < 3; ++u)
        for (std::int64_t v = 0; v < 3; ++v)
          EXPECT_EQ(t[c][o][u][v].item<float>(), w[o][c][2 - u][2 - v].item<float>());
}

TEST(SameConvByBackwardDataShapes, OnlyDenseSameStrideOneChannelsLastFloatInEights) {
  const at::Tensor x = torch::zeros({2, 16, 8, 8}).contiguous(at::MemoryFormat::ChannelsLast);
  EXPECT_TRUE(same_conv_by_backward_data_handles(x, 16, 16, 3, 1, 1, 1, false));
  EXPECT_FALSE(same_conv_by_backward_data_handles(x, 16, 16, 3, 2, 1, 1, false));  // stride
  EXPECT_FALSE(same_conv_by_backward_data_handles(x, 16, 16, 3, 1, 0, 1, false));  // padding
  EXPECT_FALSE(same_conv_by_backward_data_handles(x, 16, 16, 3, 1, 1, 2, false));  // groups
  EXPECT_FALSE(same_conv_by_backward_data_handles(x, 16, 16, 3, 1, 1, 1, true));   // bias
  EXPECT_FALSE(same_conv_by_backward_data_handles(x, 16, 12, 3, 1, 1, 1, false));  // channels
  EXPECT_FALSE(same_conv_by_backward_data_handles(torch::zeros({2, 16, 8, 8}), 16, 16, 3, 1, 1, 1,
                                                  false));  // not channels-last
  EXPECT_FALSE(same_conv_by_backward_data_handles(x.to(at::kDouble), 16, 16, 3, 1, 1, 1, false));
  const at::Tensor stem = torch::zeros({2, 1, 8, 8}).contiguous(at::MemoryFormat::ChannelsLast);
  EXPECT_FALSE(same_conv_by_backward_data_handles(stem, 1, 16, 3, 1, 1, 1, false));
  EXPECT_THROW(same_conv2d_forward_by_backward_data(x, torch::zeros({16, 16, 3, 3}), 0),
               InternalError);
}

// On integers every partial sum is exact, so any order of the same products gives the same
// result: the form equals at::conv2d bit for bit there (what the integer backend relies on), and
// to float rounding on random reals.
TEST(SameConvByBackwardDataForm, EqualsConv2d) {
  torch::manual_seed(5);
  for (const std::int64_t kernel : {1, 3, 5}) {
    const std::int64_t padding = (kernel - 1) / 2;
    const at::Tensor x_int = torch::randint(-255, 256, {2, 16, 7, 7})
                                 .to(at::kFloat)
                                 .contiguous(at::MemoryFormat::ChannelsLast);
    // Every partial sum within 16 * 25 * 255 * 60 < 2^24.
    const at::Tensor w_int = torch::randint(-60, 61, {24, 16, kernel, kernel}).to(at::kFloat);
    const at::Tensor y_int =
        same_conv2d_forward_by_backward_data(x_int, transposed_rotated_weight(w_int), padding);
    EXPECT_TRUE(y_int.is_contiguous(at::MemoryFormat::ChannelsLast));
    EXPECT_TRUE(torch::equal(y_int, at::conv2d(x_int, w_int, {}, {1, 1}, {padding, padding})))
        << "kernel " << kernel;

    const at::Tensor x = torch::randn({2, 16, 7, 7}).contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor w = torch::randn({24, 16, kernel, kernel});
    const at::Tensor y =
        same_conv2d_forward_by_backward_data(x, transposed_rotated_weight(w), padding);
    const at::Tensor y_ref = at::conv2d(x, w, {}, {1, 1}, {padding, padding});
    EXPECT_LE((y - y_ref).abs().max().item<double>(), 1e-5 * y_ref.abs().max().item<double>())
        << "kernel " << kernel;
  }
}

}  // namespace
}  // namespace lpdt
