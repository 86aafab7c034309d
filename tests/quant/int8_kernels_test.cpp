// The integer backend's kernels against plain references on random inputs: the int8 GEMM against
// loops, the integer convolution / linear layer and their layer gradients against float
// arithmetic on the dequantized codes (what the simulated backend computes).
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "lpdt/quant/int8_conv.h"
#include "lpdt/quant/int8_gemm.h"

namespace lpdt::quant {
namespace {

constexpr double kFloatTolerance = 1e-4;  // relative to the output's magnitude

void expect_close(const at::Tensor& actual, const at::Tensor& expected, const char* what) {
  const double scale = expected.abs().max().item<double>() + 1e-12;
  const double error = (actual - expected).abs().max().item<double>();
  EXPECT_LT(error / scale, kFloatTolerance) << what << ": max error " << error << " of " << scale;
}

TEST(ShiftWeightCodes, EqualsCodesMinus128AsInt8) {
  torch::manual_seed(3);
  // Every code from 0 to 255 at least once, then random ones; a strided view as well.
  const at::Tensor all = torch::arange(256, torch::kInt).to(at::kByte).view({2, 2, 4, 4, 4});
  const at::Tensor random = torch::randint(0, 256, {3, 5, 7, 3, 3}, torch::kInt).to(at::kByte);
  const at::Tensor strided = random.transpose(1, 2);
  for (const at::Tensor& codes : {all, random, strided}) {
    const at::Tensor expected = (codes.to(at::kInt) - 128).to(at::kChar);
    const at::Tensor shifted = shift_weight_codes(codes);
    ASSERT_EQ(shifted.scalar_type(), at::kChar);
    ASSERT_EQ(shifted.sizes(), codes.sizes());
    EXPECT_TRUE(shifted.is_contiguous());
    EXPECT_TRUE(at::equal(shifted, expected));
  }
  EXPECT_THROW(shift_weight_codes(random.to(at::kChar)), std::exception);
}

TEST(Int8Gemm, MatchesTheReferenceLoops) {
  if (!have_int8_gemm()) GTEST_SKIP() << "built without oneDNN";
  torch::manual_seed(1);
  struct Dims {
    std::int64_t m, n, k, lda;
    bool transposed;
  };
  // Shapes of a convolution's forward (K = patch) and layer gradient (small K, strided A).
  for (const Dims d : {Dims{37, 19, 53, 56, false}, Dims{37, 19, 53, 56, true},
                       Dims{189, 45, 6, 12, true}, Dims{189, 45, 6, 12, false}}) {
    const std::int64_t m = d.m, n = d.n, k = d.k, lda = d.lda;
    const bool transposed = d.transposed;
    const at::Tensor a = torch::randint(0, 256, {m, lda}, torch::kInt).to(at::kByte);
    const at::Tensor b = transposed ? torch::randint(-128, 128, {n, k}, torch::kInt).to(at::kChar)
                                    : torch::randint(-128, 128, {k, n}, torch::kInt).to(at::kChar);
    const std::int64_t ldb = transposed ? k : n;
    at::Tensor fast = at::empty({m, n}, at::kInt), slow = at::empty({m, n}, at::kInt);
    gemm_u8s8s32(m, n, k, a.data_ptr<std::uint8_t>(), lda, 131, b.data_ptr<std::int8_t>(), ldb,
                 transposed, -7, fast.data_ptr<std::int32_t>(), n);
    gemm_u8s8s32_reference(m, n, k, a.data_ptr<std::uint8_t>(), lda, 131, b.data_ptr<std::int8_t>(),
                           ldb, transposed, -7, slow.data_ptr<std::int32_t>(), n);
    EXPECT_TRUE(at::equal(fast, slow)) << "transposed " << transposed;
  }
}

// The exact float formulation (CPUs without AVX-512 VNNI) against the loops, bit for bit, on
// random codes and on the extreme ones: every factor at +-255 and K past several chunks, where one
// sum over K in float32 would no longer be exact (600 * 65,025 > 2^24).
TEST(Int8Gemm, ExactFloatPathMatchesTheReferenceLoops) {
  torch::manual_seed(2);
  for (const bool extreme : {false, true}) {
    for (const bool transposed : {false, true}) {
      const std::int64_t m = 23, n = 17, k = 3 * kExactFloatChunk + 88, lda = k + 5;
      const std::int64_t ldb = transposed ? k + 3 : n + 2;
      at::Tensor a = torch::randint(0, 256, {m, lda}, torch::kInt).to(at::kByte);
      at::Tensor b =
          torch::randint(-128, 128, {transposed ? n : k, ldb}, torch::kInt).to(at::kChar);
      std::uint8_t a_zero = 131;
      std::int8_t b_zero = -7;
      if (extreme) {  // (255 - 0) * (-128 - 127) = -65,025 in every product
        a.fill_(255);
        b.fill_(-128);
        a_zero = 0;
        b_zero = 127;
      }
      at::Tensor fast = at::full({m, n + 4}, -1, at::kInt), slow = fast.clone();
      gemm_u8s8s32_exact_float(m, n, k, a.data_ptr<std::uint8_t>(), lda, a_zero,
                               b.data_ptr<std::int8_t>(), ldb, transposed, b_zero,
                               fast.data_ptr<std::int32_t>(), n + 4);
      gemm_u8s8s32_reference(m, n, k, a.data_ptr<std::uint8_t>(), lda, a_zero,
                             b.data_ptr<std::int8_t>(), ldb, transposed, b_zero,
                             slow.data_ptr<std::int32_t>(), n + 4);
      EXPECT_TRUE(at::equal(fast, slow)) << "transposed " << transposed << " extreme " << extreme;
      if (extreme) {
        EXPECT_EQ(fast[0][0].item<std::int32_t>(), -65025 * k);
      }
      // Columns past n (the row stride's padding) are left alone.
      EXPECT_TRUE(fast.narrow(1, n, 4).eq(-1).all().item<bool>());
    }
  }
}

QuantizedTensor random_codes(const at::Tensor& x, std::int64_t k, std::uint64_t seed) {
  QuantizeRequest request{8, QuantScheme::kGemmlowp, Rounding::kStochastic, DrawKey{seed, 0, 0}, 0};
  return quantize(x, k, tensor_range(x, k), request);
}

struct ConvCase {
  std::int64_t kernel, stride, padding;
  bool bias;
  std::int64_t groups = 1, in_channels = 5, out_channels = 6;  // per node
};

class Int8ConvVsFloat : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Int8ConvVsFloat, ForwardAndLayerGradient) {
  if (!have_int8_gemm()) GTEST_SKIP() << "built without oneDNN";
  const ConvCase c = GetParam();
  const std::int64_t k = 2;
  ConvGeometry g;
  g.batch = 3, g.in_channels = c.in_channels, g.out_channels = c.out_channels, g.height = 9,
  g.width = 7;
  g.kernel = c.kernel, g.stride = c.stride, g.padding = c.padding, g.groups = c.groups;
  const std::int64_t conv_groups = k * g.groups;
  torch::manual_seed(2);
  const at::Tensor x = (torch::randn({g.batch, k * g.in_channels, g.height, g.width}) + 0.4)
                           .contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor w = torch::randn({k, g.out_channels, g.group_in(), g.kernel, g.kernel});
  const at::Tensor bias = c.bias ? torch::randn({k * g.out_channels}) : at::Tensor();
  const QuantizedTensor qx = random_codes(x, k, 3), qw = random_codes(w, k, 4);
  const at::Tensor x_real = dequantize(qx, k);
  const at::Tensor w_real =
      dequantize(qw, k).view({k * g.out_channels, g.group_in(), g.kernel, g.kernel});
  const at::Tensor y = int8_conv2d(qx, qw, bias, g, k);
  const at::Tensor expected = at::conv2d(x_real, w_real, bias, {g.stride, g.stride},
                                         {g.padding, g.padding}, {1, 1}, conv_groups);
  ASSERT_EQ(y.sizes(), expected.sizes());
  expect_close(y, expected, "forward");

  const at::Tensor gy = torch::randn_like(expected).contiguous(at::MemoryFormat::ChannelsLast);
  const QuantizedTensor qg = random_codes(gy, k, 5);
  const at::Tensor dx = int8_conv2d_input_grad(qg, qw, g, k);
  auto [expected_dx, unused_w, unused_b] = at::convolution_backward(
      dequantize(qg, k), x_real, w_real, c10::nullopt, {g.stride, g.stride}, {g.padding, g.padding},
      {1, 1}, false, {0, 0}, conv_groups, {true, false, false});
  ASSERT_EQ(dx.sizes(), expected_dx.sizes());
  expect_close(dx, expected_dx, "layer gradient");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Int8ConvVsFloat,
    ::testing::Values(ConvCase{3, 1, 1, false}, ConvCase{3, 2, 1, true}, ConvCase{1, 2, 0, false},
                      // Strided input gradients as stride-1 convolutions of the spread output
                      // gradient (on CPUs with direct int8 kernels): edges the forward's floor
                      // leaves over (9x7 input), stride 3, kernel 5, no padding, and a padding
                      // past kernel - 1 (the GEMM path).
                      ConvCase{3, 3, 1, false}, ConvCase{5, 2, 2, true}, ConvCase{3, 2, 0, false},
                      ConvCase{2, 2, 0, false}, ConvCase{3, 2, 3, false},
                      ConvCase{5, 1, 2, true}, ConvCase{3, 1, 0, false},
                      // 1x1, stride 1: the GEMM reads the codes in place.
                      ConvCase{1, 1, 0, true}, ConvCase{1, 1, 0, false, 2, 6, 4},
                      // Grouped: one GEMM per group ("same" and strided).
                      ConvCase{3, 1, 1, true, 2, 6, 4}, ConvCase{3, 2, 1, false, 2, 4, 6},
                      // Depthwise: the direct kernel, stride 1 and 2, 5x5.
                      ConvCase{3, 1, 1, true, 6, 6, 6}, ConvCase{3, 2, 1, false, 6, 6, 6},
                      ConvCase{5, 1, 2, false, 4, 4, 4}, ConvCase{3, 2, 0, true, 5, 5, 5},
                      // Depth multiplier 2: GEMMs, not the direct kernel.
                      ConvCase{3, 1, 1, false, 3, 3, 6}));

TEST(Int8Linear, ForwardAndLayerGradientMatchFloat) {
  if (!have_int8_gemm()) GTEST_SKIP() << "built without oneDNN";
  const std::int64_t k = 3, b = 7, in = 11, out = 5;
  torch::manual_seed(6);
  const at::Tensor x = torch::randn({k, b, in}), w = torch::randn({k, out, in});
  const at::Tensor bias = torch::randn({k, out});
  const QuantizedTensor qx = random_codes(x, k, 1), qw = random_codes(w, k, 2);
  expect_close(int8_linear(qx, qw, bias),
               at::baddbmm(bias.unsqueeze(1), dequantize(qx, k), dequantize(qw, k).transpose(1, 2)),
               "forward");
  const QuantizedTensor qg = random_codes(torch::randn({k, b, out}), k, 3);
  expect_close(int8_linear_input_grad(qg, qw), at::bmm(dequantize(qg, k), dequantize(qw, k)),
               "layer gradient");
}

}  // namespace
}  // namespace lpdt::quant
