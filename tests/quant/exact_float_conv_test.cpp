// The float32 formulation of the integer convolution (exact_float_conv.h) against plain loops over
// the same codes, bit for bit: random codes and extreme ones (every product of magnitude 65,025,
// the largest sums a chunk can hold), channel counts at and across the worst case's chunk
// boundary, a node's slice of a wider channels-last tensor, in both float forms (oneDNN's forward
// and backward-data kernels; the second takes the stride-1 "same" shapes with channels in 8s);
// and its chunk plan against the bound it keeps. Runs on every CPU.
#include "lpdt/quant/exact_float_conv.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

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
  for (const FloatConvForm form : {FloatConvForm::kForward, FloatConvForm::kBackwardData}) {
    torch::manual_seed(11);
    const std::string name = form == FloatConvForm::kForward ? "forward" : "backward-data";
    for (const bool extreme : {false, true}) {
      const auto [x, w, x_zero, w_zero] = test_conv_codes(g, c.pixel_stride, extreme);
      at::Tensor fast = at::empty({g.positions(), g.out_channels}, at::kInt);
      exact_float_conv_s32(x.data_ptr<std::uint8_t>(), c.pixel_stride, x_zero,
                           w.data_ptr<std::int8_t>(), w_zero, g, fast.data_ptr<std::int32_t>(),
                           form);
      const at::Tensor slow = reference_conv(x, c.pixel_stride, x_zero, w, w_zero, g);
      EXPECT_TRUE(at::equal(fast, slow)) << name << ", extreme " << extreme << ": max difference "
                                         << (fast - slow).abs().max().item<int>();
      // The sums come as float32 exactly when one chunk held them.
      const at::Tensor sums = exact_float_conv(x.data_ptr<std::uint8_t>(), c.pixel_stride, x_zero,
                                               w.data_ptr<std::int8_t>(), w_zero, g, form);
      const std::size_t chunks =
          exact_float_conv_chunks(w.data_ptr<std::int8_t>(), w_zero, x_zero, g).size();
      EXPECT_EQ(sums.scalar_type() == at::kFloat, chunks == 1)
          << name << ", " << chunks << " chunks";
      EXPECT_TRUE(at::equal(sums.to(at::kInt), slow)) << name << ", extreme " << extreme;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ExactFloatConv,
    ::testing::Values(
        ExactCase{5, 6, 3, 1, 1, 15},     // a node's slice of 3 nodes
        ExactCase{16, 16, 3, 1, 1, 32},   // ResNet-20's first stage, of 2 nodes
        ExactCase{32, 8, 3, 1, 1, 32},    // one chunk; at the extremes 28 + 4 channels
        ExactCase{16, 24, 5, 1, 2, 16},   // 5x5 "same", channels in 8s
        ExactCase{8, 16, 1, 1, 0, 24},    // 1x1, a node's slice
        ExactCase{28, 8, 3, 1, 1, 28},    // the worst case's one full chunk (28 x 9 taps)
        ExactCase{29, 8, 3, 1, 1, 29},    // the worst case's two chunks
        ExactCase{64, 9, 3, 1, 1, 128},   // ResNet-20's last stage (worst case: 3 chunks)
        ExactCase{6, 11, 3, 2, 1, 12},    // strided
        ExactCase{70, 11, 1, 2, 0, 70},   // the 1x1 strided shortcut, 1 chunk
        ExactCase{300, 4, 1, 1, 0, 300},  // 1x1, worst case 256 + 44 channels
        ExactCase{1, 16, 3, 1, 1, 2},     // one input channel
        ExactCase{11, 8, 5, 1, 2, 11},    // 5x5: worst-case chunks of 10 channels
        ExactCase{4, 5, 3, 1, 0, 4}));    // no padding

// The plan's bound, computed independently: x_max * sum over the chunk's channels of the largest
// sum of |w - z_w| over one output channel's taps.
std::int64_t chunk_bound(const at::Tensor& w, std::int8_t w_zero, std::uint8_t x_zero,
                         const ChannelChunk& chunk) {
  const at::Tensor per_channel = (w.narrow(1, chunk.first, chunk.count).to(at::kLong) - w_zero)
                                     .abs()
                                     .sum({2, 3})
                                     .amax(0);
  return std::max<std::int64_t>(x_zero, 255 - x_zero) * per_channel.sum().item<std::int64_t>();
}

// Consecutive chunks covering every input channel, each within 2^24, none of which could take the
// next channel too (the fewest, greedily).
void expect_a_tight_plan(const at::Tensor& w, std::int8_t w_zero, std::uint8_t x_zero,
                         const ConvGeometry& g) {
  const std::vector<ChannelChunk> plan =
      exact_float_conv_chunks(w.data_ptr<std::int8_t>(), w_zero, x_zero, g);
  std::int64_t next = 0;
  for (std::size_t j = 0; j < plan.size(); ++j) {
    EXPECT_EQ(plan[j].first, next);
    EXPECT_GT(plan[j].count, 0);
    EXPECT_LE(chunk_bound(w, w_zero, x_zero, plan[j]), std::int64_t{1} << 24) << "chunk " << j;
    if (j + 1 < plan.size()) {
      EXPECT_GT(chunk_bound(w, w_zero, x_zero, {plan[j].first, plan[j].count + 1}),
                std::int64_t{1} << 24)
          << "chunk " << j << " could have taken channel " << plan[j].first + plan[j].count;
    }
    next = plan[j].first + plan[j].count;
  }
  EXPECT_EQ(next, g.in_channels);
}

TEST(ExactFloatConv, TheWorstCaseTakes28ChannelsOf3x3PerChunk) {
  const ConvGeometry g = test_geometry(1, 64, 9, 3, 1, 1);
  const auto codes = test_conv_codes(g, 64, /*extreme=*/true);
  const std::vector<ChannelChunk> plan = exact_float_conv_chunks(
      codes.w.data_ptr<std::int8_t>(), codes.w_zero, codes.x_zero, g);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].count, 28);  // 28 * 9 * 255 * 255 < 2^24 < 29 * 9 * 255 * 255
  EXPECT_EQ(plan[1].count, 28);
  EXPECT_EQ(plan[2].count, 8);
  expect_a_tight_plan(codes.w, codes.w_zero, codes.x_zero, g);
}

TEST(ExactFloatConv, PlansFromTheWeightsTheyAre) {
  torch::manual_seed(5);
  for (const std::int64_t kernel : {1, 3, 5}) {
    for (const double spread : {4.0, 30.0, 90.0}) {
      const ConvGeometry g = test_geometry(1, 150, 7, kernel, 1, kernel / 2);
      // Weight codes around the zero point with a spread, clamped to int8: small ones fit in
      // one chunk, wide ones need several.
      const at::Tensor w = (torch::randn({7, 150, kernel, kernel}) * spread - 20.0)
                               .round()
                               .clamp(-128, 127)
                               .to(at::kChar);
      for (const std::uint8_t x_zero : {0, 128, 201}) {
        SCOPED_TRACE("kernel " + std::to_string(kernel) + ", spread " + std::to_string(spread) +
                     ", x zero " + std::to_string(x_zero));
        expect_a_tight_plan(w, -20, x_zero, g);
      }
    }
  }
}

// What makes the path fast: weights of trained size (codes within about +-40 of the zero point)
// keep ResNet-20's widest convolution, 64 channels of 3x3, in one float32 convolution, whose sums
// are the result.
TEST(ExactFloatConv, TrainedSizedWeightsOf64ChannelsTakeOneConvolution) {
  if (!exact_float_conv_available()) GTEST_SKIP() << "needs a LibTorch built with oneDNN";
  torch::manual_seed(8);
  const ConvGeometry g = test_geometry(2, 64, 64, 3, 1, 1);
  auto codes = test_conv_codes(g, 64, /*extreme=*/false);
  codes.w = (torch::randn({64, 64, 3, 3}) * 20.0 - 31.0).round().clamp(-128, 127).to(at::kChar);
  const std::vector<ChannelChunk> plan = exact_float_conv_chunks(
      codes.w.data_ptr<std::int8_t>(), codes.w_zero, codes.x_zero, g);
  EXPECT_EQ(plan.size(), 1u);
  const at::Tensor sums = exact_float_conv(codes.x.data_ptr<std::uint8_t>(), 64, codes.x_zero,
                                           codes.w.data_ptr<std::int8_t>(), codes.w_zero, g);
  EXPECT_EQ(sums.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(sums.to(at::kInt),
                        reference_conv(codes.x, 64, codes.x_zero, codes.w, codes.w_zero, g)));
}

}  // namespace
}  // namespace lpdt::quant
