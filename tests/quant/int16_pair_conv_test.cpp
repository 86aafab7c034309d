// The integer backend's int16 pair-product convolution for AVX2 CPUs (int16_pair_conv.h) against
// plain loops over the same codes, bit for bit: random codes and extreme ones (every product of
// magnitude 65,025), odd input channel counts (a zero channel pads the last pair), output channel
// counts that are not a multiple of the 16-channel block, widths that take every pixel block of 1
// to 6, strides, padding and a node's slice of a wider channels-last tensor; the largest sum it
// accepts, which must still be exact in int32; and the layer operations (int8_conv2d and its input
// gradient), which take this kernel at the AVX2 level and the float32 one below it, giving the same
// outputs bit for bit. Skipped on CPUs without AVX2.
#include "lpdt/quant/int16_pair_conv.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/quant/int8_direct_conv.h"
#include "lpdt/quant/int8_gemm.h"
#include "reference_conv.h"

namespace lpdt::quant {
namespace {

bool cpu_runs_avx2() {
  const std::vector<SimdLevel> levels = cpu_simd_levels();
  return std::find(levels.begin(), levels.end(), SimdLevel::kAvx2) != levels.end();
}

struct PairCase {
  std::int64_t in_channels, out_channels, width, kernel, stride, padding, pixel_stride;
};

class Int16PairConv : public ::testing::TestWithParam<PairCase> {};

TEST_P(Int16PairConv, MatchesTheReferenceLoopsBitForBit) {
  if (!cpu_runs_avx2()) GTEST_SKIP() << "needs a CPU with AVX2";
  ScopedSimdLevel avx2(SimdLevel::kAvx2);
  const PairCase c = GetParam();
  ConvGeometry g = test_geometry(3, c.in_channels, c.out_channels, c.kernel, c.stride, c.padding);
  g.width = c.width;
  ASSERT_TRUE(int16_pair_conv_handles(g));
  torch::manual_seed(17);
  for (const bool extreme : {false, true}) {
    const auto [x, w, x_zero, w_zero] = test_conv_codes(g, c.pixel_stride, extreme);
    // Filled with a marker, so that an output the kernel leaves unwritten shows.
    at::Tensor fast = at::full({g.positions(), g.out_channels}, 12345, at::kInt);
    int16_pair_conv_s32(x.data_ptr<std::uint8_t>(), c.pixel_stride, x_zero,
                        w.data_ptr<std::int8_t>(), w_zero, g, fast.data_ptr<std::int32_t>());
    const at::Tensor slow = reference_conv(x, c.pixel_stride, x_zero, w, w_zero, g);
    EXPECT_TRUE(at::equal(fast, slow)) << "extreme " << extreme << ": max difference "
                                       << (fast - slow).abs().max().item<int>();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Int16PairConv,
    ::testing::Values(PairCase{16, 16, 7, 3, 1, 1, 32},   // ResNet-20's first stage, of 2 nodes
                      PairCase{32, 32, 16, 3, 1, 1, 32},  // 6 + 6 + 4 pixels per row
                      PairCase{64, 64, 8, 3, 1, 1, 64},   // 4 + 4
                      PairCase{1, 16, 32, 3, 1, 1, 1},    // one input channel (a zero pair half)
                      PairCase{5, 6, 11, 3, 1, 1, 15},    // odd channels, a partial block
                      PairCase{7, 21, 13, 3, 1, 1, 7},    // a full and a partial output block
                      PairCase{16, 32, 9, 3, 2, 1, 16},   // strided: 5 output pixels
                      PairCase{16, 32, 10, 1, 2, 0, 48},  // the 1x1 strided shortcut
                      PairCase{8, 16, 2, 3, 1, 1, 8},     // a 2-pixel row
                      PairCase{8, 16, 1, 3, 1, 1, 8},     // a 1-pixel row
                      PairCase{3, 17, 12, 5, 1, 2, 3},    // 5x5 "same"
                      PairCase{4, 5, 7, 3, 1, 0, 4}));    // no padding: 5x5 outputs

// The largest sum it accepts is exact: kMaxInt16PairTerms products of magnitude 65,025, all of one
// sign, reach -2,147,450,625, just inside int32; one more pair of channels is refused.
TEST(Int16PairConvBound, TheLargestAcceptedSumIsExact) {
  if (!cpu_runs_avx2()) GTEST_SKIP() << "needs a CPU with AVX2";
  ScopedSimdLevel avx2(SimdLevel::kAvx2);
  ConvGeometry g;
  g.batch = 1, g.height = 1, g.width = 1, g.kernel = 1, g.out_channels = 1;
  g.in_channels = kMaxInt16PairTerms - 1;  // even, and the most an even count may be
  ASSERT_TRUE(int16_pair_conv_handles(g));
  const at::Tensor x = torch::full({g.in_channels}, 255, torch::kByte);
  const at::Tensor w = torch::full({1, g.in_channels, 1, 1}, -128, torch::kChar);
  std::int32_t sum = 0;
  int16_pair_conv_s32(x.data_ptr<std::uint8_t>(), g.in_channels, /*x_zero=*/0,
                      w.data_ptr<std::int8_t>(), /*weight_zero=*/127, g, &sum);
  EXPECT_EQ(sum, std::int64_t{-65025} * g.in_channels);
  EXPECT_EQ(sum, reference_conv(x, g.in_channels, 0, w, 127, g).item<std::int32_t>());
  g.in_channels += 1;  // rounded up to an even count: two terms more than the bound allows
  EXPECT_FALSE(int16_pair_conv_handles(g));
  g.in_channels = 16;
  g.groups = 2;
  EXPECT_FALSE(int16_pair_conv_handles(g)) << "grouped convolutions are not its to run";
  g.groups = 1;
  ScopedSimdLevel baseline(SimdLevel::kBaseline);
  EXPECT_FALSE(int16_pair_conv_handles(g)) << "below AVX2";
}

// The layer operations, several nodes at once: at the AVX2 level their dense convolutions run this
// kernel, at the baseline level oneDNN's float32 one (or, on CPUs with VNNI, oneDNN's int8 one at
// both); the outputs agree bit for bit, forward and input gradient, bias and a "same" and a
// strided geometry included.
TEST(Int16PairConvLayers, Int8ConvAndItsInputGradientEqualTheFloat32Form) {
  if (!cpu_runs_avx2()) GTEST_SKIP() << "needs a CPU with AVX2";
  if (!have_int8_gemm()) GTEST_SKIP() << "built without oneDNN: no integer backend";
  torch::manual_seed(5);
  const std::int64_t k = 3;
  for (const std::int64_t stride : {1, 2}) {
    ConvGeometry g = test_geometry(4, 12, 24, 3, stride, 1);
    const auto codes = [](at::IntArrayRef shape) {
      return torch::randint(0, 256, shape, torch::kInt).to(torch::kByte);
    };
    QuantizedTensor x{codes({g.batch, k * g.in_channels, g.height, g.width})
                          .contiguous(at::MemoryFormat::ChannelsLast),
                      torch::rand({k}) * 0.1 + 0.01, torch::randint(0, 256, {k}, torch::kFloat)};
    QuantizedTensor w{codes({k, g.out_channels, g.in_channels, g.kernel, g.kernel}),
                      torch::rand({k}) * 0.1 + 0.01, torch::randint(0, 256, {k}, torch::kFloat)};
    QuantizedTensor gy{codes({g.batch, k * g.out_channels, g.out_height(), g.out_width()})
                           .contiguous(at::MemoryFormat::ChannelsLast),
                       torch::rand({k}) * 0.1 + 0.01, torch::randint(0, 256, {k}, torch::kFloat)};
    const at::Tensor bias = torch::randn({k * g.out_channels});
    at::Tensor y_avx2, dx_avx2, y_base, dx_base;
    {
      ScopedSimdLevel avx2(SimdLevel::kAvx2);
      ASSERT_TRUE(int16_pair_conv_handles(g));
      y_avx2 = int8_conv2d(x, w, bias, g, k);
      dx_avx2 = int8_conv2d_input_grad(gy, w, g, k);
    }
    {
      ScopedSimdLevel baseline(SimdLevel::kBaseline);
      y_base = int8_conv2d(x, w, bias, g, k);
      dx_base = int8_conv2d_input_grad(gy, w, g, k);
    }
    EXPECT_TRUE(at::equal(y_avx2, y_base))
        << "stride " << stride << ": forward, max difference "
        << (y_avx2 - y_base).abs().max().item<float>();
    EXPECT_TRUE(at::equal(dx_avx2, dx_base))
        << "stride " << stride << ": input gradient, max difference "
        << (dx_avx2 - dx_base).abs().max().item<float>();
  }
}

// The run record (summary.json backend.integer_kernels) names the kernel the dense convolutions
// take at the level running.
TEST(Int16PairConvLayers, TheRunRecordNamesTheKernelThatRuns) {
  if (!cpu_runs_avx2()) GTEST_SKIP() << "needs a CPU with AVX2";
  if (!have_int8_gemm()) GTEST_SKIP() << "built without oneDNN: no integer backend";
  if (int8_gemm_is_exact_in_onednn()) {
    EXPECT_NE(int8_gemm_kernel().find("oneDNN int8 direct convolution"), std::string::npos);
    return;
  }
  {
    ScopedSimdLevel avx2(SimdLevel::kAvx2);
    EXPECT_NE(int8_gemm_kernel().find("int16 pair products"), std::string::npos)
        << int8_gemm_kernel();
  }
  ScopedSimdLevel baseline(SimdLevel::kBaseline);
  EXPECT_NE(int8_gemm_kernel().find("float32 direct convolutions"), std::string::npos)
      << int8_gemm_kernel();
}

}  // namespace
}  // namespace lpdt::quant
