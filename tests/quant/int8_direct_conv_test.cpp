// oneDNN's int8 direct convolution with the weight-zero-point correction (int8_direct_conv.h)
// against plain loops over the same codes, bit for bit, on random and extreme codes, for a node's
// channel slice of a wider channels-last tensor (pixel stride > C).
#include "lpdt/quant/int8_direct_conv.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <omp.h>

#include <string>
#include <thread>
#include <vector>

#include "reference_conv.h"

namespace lpdt::quant {
namespace {

struct DirectCase {
  std::int64_t in_channels, out_channels, kernel, stride, padding, pixel_stride;
};

class Int8DirectConv : public ::testing::TestWithParam<DirectCase> {};

TEST_P(Int8DirectConv, MatchesTheReferenceLoopsBitForBit) {
  if (!int8_direct_conv_available()) GTEST_SKIP() << "needs oneDNN and AVX-512 VNNI";
  const DirectCase c = GetParam();
  const ConvGeometry g =
      test_geometry(3, c.in_channels, c.out_channels, c.kernel, c.stride, c.padding);
  torch::manual_seed(7);
  for (const bool extreme : {false, true}) {
    const auto [x, w, x_zero, w_zero] = test_conv_codes(g, c.pixel_stride, extreme);
    at::Tensor fast = at::empty({g.positions(), g.out_channels}, at::kInt);
    int8_direct_conv_s32(x.data_ptr<std::uint8_t>(), c.pixel_stride, x_zero,
                         w.data_ptr<std::int8_t>(), w_zero, g, fast.data_ptr<std::int32_t>());
    const at::Tensor slow = reference_conv(x, c.pixel_stride, x_zero, w, w_zero, g);
    EXPECT_TRUE(at::equal(fast, slow))
        << "extreme " << extreme << ": max difference " << (fast - slow).abs().max().item<int>();
    // The correction left to the caller: oneDNN's sums and S[p], with acc - z_w S[p] the same.
    at::Tensor deferred = at::empty_like(fast);
    at::Tensor sums = at::empty({g.positions(), 1}, at::kInt);
    int8_direct_conv_s32(x.data_ptr<std::uint8_t>(), c.pixel_stride, x_zero,
                         w.data_ptr<std::int8_t>(), w_zero, g, deferred.data_ptr<std::int32_t>(),
                         sums.data_ptr<std::int32_t>());
    EXPECT_FALSE(at::equal(deferred, slow)) << "extreme " << extreme;
    EXPECT_TRUE(at::equal(deferred - static_cast<int>(w_zero) * sums, slow))
        << "extreme " << extreme;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Int8DirectConv,
    ::testing::Values(DirectCase{5, 6, 3, 1, 1, 5},     // "same", dense
                      DirectCase{5, 6, 3, 1, 1, 15},    // a node's slice of 3 nodes
                      DirectCase{16, 16, 3, 1, 1, 32},  // ResNet-20's first stage
                      DirectCase{6, 11, 3, 2, 1, 12},   // strided (a stage's first conv)
                      DirectCase{6, 11, 1, 2, 0, 6},    // the 1x1 strided shortcut
                      DirectCase{1, 16, 3, 1, 1, 2},    // one input channel (Fashion-MNIST)
                      DirectCase{3, 8, 5, 1, 2, 3},     // 5x5
                      DirectCase{4, 5, 3, 1, 0, 4}));   // no padding

// The convolution writes its [positions, Cout] sums and nothing past them, for geometries where
// one of oneDNN 2.6's implementations writes past its destination (jit_1x1:avx512_core_amx_int8:
// 12 pixels past for 1x1 convolutions of 64 input channels on 6x6 images, as ResNet-20's last
// shortcut's input gradient on 12x12 inputs); such an implementation must never be taken. The
// sums stay exact against the reference loops.
TEST(Int8DirectConv, WritesNothingPastItsOutput) {
  if (!int8_direct_conv_available()) GTEST_SKIP() << "needs oneDNN and AVX-512 VNNI";
  struct Case {
    std::int64_t batch, in_channels, out_channels, kernel, size;
  };
  torch::manual_seed(29);
  for (const Case& c : {Case{2, 64, 32, 1, 6}, Case{3, 64, 16, 1, 6}, Case{1, 64, 64, 1, 6},
                        Case{2, 64, 32, 3, 6}, Case{2, 32, 16, 1, 12}}) {
    ConvGeometry g = test_geometry(c.batch, c.in_channels, c.out_channels, c.kernel, 1,
                                   (c.kernel - 1) / 2);
    g.height = g.width = c.size;
    const auto [x, w, x_zero, w_zero] = test_conv_codes(g, c.in_channels, false);
    const std::int64_t outputs = g.positions() * g.out_channels, guard = 1 << 14;
    constexpr std::int32_t kGuardValue = 0x5A5A5A5A;
    at::Tensor acc = at::full({outputs + guard}, kGuardValue, at::kInt);
    int8_direct_conv_s32(x.data_ptr<std::uint8_t>(), c.in_channels, x_zero,
                         w.data_ptr<std::int8_t>(), w_zero, g, acc.data_ptr<std::int32_t>());
    EXPECT_TRUE(at::equal(acc.narrow(0, outputs, guard), at::full({guard}, kGuardValue, at::kInt)))
        << c.in_channels << " -> " << c.out_channels << " channels, " << c.kernel << "x"
        << c.kernel << " on " << c.size << "x" << c.size << ": written past the output";
    EXPECT_TRUE(at::equal(acc.narrow(0, 0, outputs).view({g.positions(), g.out_channels}),
                          reference_conv(x, c.in_channels, x_zero, w, w_zero, g)));
  }
}

// Threads meeting new geometries together, as passes on worker threads do at a run's start: each
// at one OpenMP thread, each time the candidates of the same fresh geometries in its own order
// (an 8-bit MobileNetV2's stem and 1x1 layers at batch 8), then computes its own codes. Every
// thread's sums are exact and nothing is written past them. Timing side by side once let a
// candidate write outside its buffers (int8_direct_conv.cpp, timing_mutex).
TEST(Int8DirectConv, ThreadsMeetingNewGeometriesTogetherGetExactSums) {
  if (!int8_direct_conv_available()) GTEST_SKIP() << "needs oneDNN and AVX-512 VNNI";
  struct Case {
    std::int64_t in_channels, out_channels, kernel, size;
  };
  // Not used by the other tests of this file: the primitives are made (and timed) here.
  const std::vector<Case> cases = {Case{3, 32, 3, 30}, Case{24, 144, 1, 30}, Case{144, 24, 1, 30},
                                   Case{32, 192, 1, 14}, Case{96, 576, 1, 6}, Case{576, 96, 1, 6}};
  constexpr int kThreads = 3;
  constexpr std::int32_t kGuardValue = 0x5A5A5A5A;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      omp_set_num_threads(1);
      for (std::size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[(i + static_cast<std::size_t>(t)) % cases.size()];
        ConvGeometry g = test_geometry(8, c.in_channels, c.out_channels, c.kernel, 1,
                                       (c.kernel - 1) / 2);
        g.height = g.width = c.size;
        at::Tensor x = at::randint(0, 256, {g.batch * g.height * g.width * c.in_channels}, at::kByte);
        at::Tensor w = at::randint(-128, 128, {c.out_channels * c.in_channels * c.kernel * c.kernel},
                                   at::kChar);
        const auto x_zero = static_cast<std::uint8_t>(7 + 30 * t);
        const auto w_zero = static_cast<std::int8_t>(t - 1);
        const std::int64_t outputs = g.positions() * g.out_channels, guard = 1 << 12;
        at::Tensor acc = at::full({outputs + guard}, kGuardValue, at::kInt);
        int8_direct_conv_s32(x.data_ptr<std::uint8_t>(), c.in_channels, x_zero,
                             w.data_ptr<std::int8_t>(), w_zero, g, acc.data_ptr<std::int32_t>());
        const at::Tensor slow = reference_conv(x, c.in_channels, x_zero, w, w_zero, g);
        if (!at::equal(acc.narrow(0, 0, outputs).view({g.positions(), g.out_channels}), slow) ||
            !at::equal(acc.narrow(0, outputs, guard), at::full({guard}, kGuardValue, at::kInt))) {
          failures[static_cast<std::size_t>(t)] += std::to_string(c.in_channels) + " -> " +
                                                   std::to_string(c.out_channels) + "; ";
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[static_cast<std::size_t>(t)], "") << "thread " << t << ": wrong sums";
  }
}

// The correction's window sums against the reference loops' sum over each window's pixels and
// channels, on random codes: channel counts below, at and past the 16-byte pixel sums, strides 1
// and 2, kernels 1 to 5, with and without padding, a node's slice of a wider tensor. Runs on any
// CPU.
TEST(Int8DirectConv, WindowSumsEqualABruteForceSum) {
  struct Case {
    std::int64_t channels, kernel, stride, padding, pixel_stride, height, width;
  };
  torch::manual_seed(23);
  for (const Case& c :
       {Case{16, 3, 1, 1, 16, 9, 7}, Case{37, 3, 1, 1, 40, 6, 11}, Case{64, 3, 2, 1, 64, 8, 8},
        Case{5, 5, 1, 2, 15, 7, 9}, Case{16, 1, 2, 0, 48, 9, 9}, Case{1, 3, 1, 0, 2, 5, 6},
        Case{32, 3, 2, 1, 32, 7, 5}}) {
    ConvGeometry g;
    g.batch = 2, g.in_channels = c.channels, g.out_channels = 1, g.height = c.height,
    g.width = c.width, g.kernel = c.kernel, g.stride = c.stride, g.padding = c.padding;
    const std::uint8_t zero = 113;
    const at::Tensor x =
        torch::randint(0, 256, {g.batch * g.height * g.width * c.pixel_stride}, torch::kInt)
            .to(at::kByte);
    const std::uint8_t* xp = x.data_ptr<std::uint8_t>();
    std::vector<std::int32_t> sums(static_cast<std::size_t>(g.positions()));
    window_sums(xp, c.pixel_stride, zero, g, sums.data());
    // A window's sum is the convolution with one all-ones output channel and weight zero point 0.
    const at::Tensor ones = at::ones({1, c.channels, c.kernel, c.kernel}, at::kChar);
    const at::Tensor expected = reference_conv(x, c.pixel_stride, zero, ones, 0, g);
    for (std::int64_t p = 0; p < g.positions(); ++p) {
      ASSERT_EQ(sums[p], expected.data_ptr<std::int32_t>()[p])
          << c.channels << " channels, kernel " << c.kernel << ", stride " << c.stride
          << ", output " << p;
    }
  }
}

TEST(Int8DirectConv, WindowSumsCountOnlyPixelsInsideTheImage) {
  ConvGeometry g;
  g.batch = 2, g.in_channels = 3, g.out_channels = 1, g.height = 4, g.width = 5, g.kernel = 3,
  g.stride = 1, g.padding = 1;
  // Every code is the zero point + 1: a pixel adds C = 3, a window its pixels inside the image.
  const std::uint8_t zero = 10;
  const std::vector<std::uint8_t> x(static_cast<std::size_t>(2 * 4 * 5 * 3), zero + 1);
  std::vector<std::int32_t> sums(static_cast<std::size_t>(g.positions()));
  window_sums(x.data(), 3, zero, g, sums.data());
  EXPECT_EQ(sums[0], 3 * 4);               // corner: 2 x 2 pixels inside
  EXPECT_EQ(sums[1], 3 * 6);               // top edge: 2 x 3
  EXPECT_EQ(sums[5 + 1], 3 * 9);           // interior
  EXPECT_EQ(sums[20 + 4 * 5 - 1], 3 * 4);  // the second sample's last corner
}

}  // namespace
}  // namespace lpdt::quant
