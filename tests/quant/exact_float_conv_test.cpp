// The float32 formulation of the integer convolution (exact_float_conv.h) against plain loops over
// the same codes, bit for bit: random codes and extreme ones (every product of magnitude 65,025,
// the largest sums a chunk can hold), channel counts at and across the chunk boundary, a node's
// slice of a wider channels-last tensor. Runs on every CPU.
#include "lpdt/quant/exact_float_conv.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "lpdt/quant/int8_gemm.h"
#include "reference_conv.h"

namespace lpdt::quant {
namespace {

struct ExactCase {
  std::int64_t in_channels, out_channels, kernel, stride, padding, pixel_stride;
};

class ExactFloatConv : public ::testing::TestWithParam<ExactCase> {};

TEST_P(ExactFloatConv, MatchesTheReferenceLoopsBitForBit) {
  if (!exact_float_conv_available()) GTEST_SKIP() << "needs a LibTorch built with oneDNN";
  const ExactCase c = GetParam();
  const ConvGeometry g =
      test_geometry(2, c.in_channels, c.out_channels, c.kernel, c.stride, c.padding);
  torch::manual_seed(11);
  for (const bool extreme : {false, true}) {
    const auto [x, w, x_zero, w_zero] = test_conv_codes(g, c.pixel_stride, extreme);
    at::Tensor fast = at::empty({g.positions(), g.out_channels}, at::kInt);
    exact_float_conv_s32(x.data_ptr<std::uint8_t>(), c.pixel_stride, x_zero,
                         w.data_ptr<std::int8_t>(), w_zero, g, fast.data_ptr<std::int32_t>());
    const at::Tensor slow = reference_conv(x, c.pixel_stride, x_zero, w, w_zero, g);
    EXPECT_TRUE(at::equal(fast, slow))
        << "extreme " << extreme << ": max difference " << (fast - slow).abs().max().item<int>();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ExactFloatConv,
    ::testing::Values(ExactCase{5, 6, 3, 1, 1, 15},     // a node's slice of 3 nodes
                      ExactCase{16, 16, 3, 1, 1, 32},   // ResNet-20's first stage, of 2 nodes
                      ExactCase{28, 8, 3, 1, 1, 28},    // one full chunk (28 x 9 taps <= 256)
                      ExactCase{29, 8, 3, 1, 1, 29},    // two chunks
                      ExactCase{64, 9, 3, 1, 1, 128},   // three chunks, ResNet-20's last stage
                      ExactCase{6, 11, 3, 2, 1, 12},    // strided
                      ExactCase{70, 11, 1, 2, 0, 70},   // the 1x1 strided shortcut, 1 chunk
                      ExactCase{300, 4, 1, 1, 0, 300},  // 1x1 over two chunks of 150
                      ExactCase{1, 16, 3, 1, 1, 2},     // one input channel
                      ExactCase{11, 8, 5, 1, 2, 11},    // 5x5: chunks of 10 channels
                      ExactCase{4, 5, 3, 1, 0, 4}));    // no padding

TEST(ExactFloatConv, ChunksKeepEverySumBelowTwoToThe24) {
  EXPECT_EQ(exact_float_conv_chunk(3), 28);
  EXPECT_EQ(exact_float_conv_chunk(1), kExactFloatChunk);
  EXPECT_EQ(exact_float_conv_chunk(5), 10);
  for (std::int64_t kernel : {1, 3, 5, 7}) {
    EXPECT_LT(kernel * kernel * exact_float_conv_chunk(kernel) * 255 * 255, 1 << 24);
  }
}

}  // namespace
}  // namespace lpdt::quant
