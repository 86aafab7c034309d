// oneDNN's float32 convolution primitives called directly (core/onednn_float_conv.h): forward,
// input gradient and weight gradient against plain loops in double on random inputs, over
// strides, paddings, kernels and odd sizes; bit for bit against at::conv2d on integer-valued
// inputs (every partial sum exact); at both thread counts and on two threads at once; the same in
// bfloat16; and which inputs the layers send here.
#include "lpdt/core/onednn_float_conv.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <thread>
#include <vector>

#include "lpdt/core/error.h"

namespace lpdt {
namespace {

struct Case {
  std::int64_t batch, in, out, height, width, kernel, stride, padding;
};

const std::vector<Case> kCases = {
    {2, 3, 5, 7, 6, 3, 1, 1},    // odd channel counts, a non-square image
    {2, 16, 16, 8, 8, 3, 1, 1},  // ResNet's 3x3 "same" layer
    {3, 16, 32, 9, 9, 3, 2, 1},  // its strided layer, odd size
    {2, 16, 32, 8, 8, 1, 2, 0},  // its 1x1 shortcut
    {1, 1, 16, 6, 6, 3, 1, 1},   // the stem: one input channel
    {2, 4, 6, 5, 7, 5, 1, 2},    // a 5x5 kernel
    {2, 8, 4, 6, 6, 2, 2, 0},    // an even kernel, no padding
};

at::Tensor channels_last(const at::Tensor& t) {
  return t.contiguous(at::MemoryFormat::ChannelsLast);
}

// y[n, o, i, j] = sum_{c, u, v} x[n, c, i s - p + u, j s - p + v] w[o, c, u, v], taps outside the
// image read zero; and the two gradients of sum(y * gy), all in double by plain loops.
struct Reference {
  at::Tensor y, dx, dw;
};
Reference reference(const at::Tensor& x_f, const at::Tensor& w_f, const at::Tensor& gy_f,
                    const Case& c) {
  const at::Tensor x = x_f.to(at::kDouble).contiguous(), w = w_f.to(at::kDouble).contiguous();
  const at::Tensor gy = gy_f.to(at::kDouble).contiguous();
  const std::int64_t ho = gy.size(2), wo = gy.size(3);
  Reference r{torch::zeros(gy.sizes(), at::kDouble), torch::zeros(x.sizes(), at::kDouble),
              torch::zeros(w.sizes(), at::kDouble)};
  const auto xa = x.accessor<double, 4>(), wa = w.accessor<double, 4>();
  const auto ga = gy.accessor<double, 4>();
  auto ya = r.y.accessor<double, 4>(), dxa = r.dx.accessor<double, 4>();
  auto dwa = r.dw.accessor<double, 4>();
  for (std::int64_t n = 0; n < c.batch; ++n)
    for (std::int64_t o = 0; o < c.out; ++o)
      for (std::int64_t i = 0; i < ho; ++i)
        for (std::int64_t j = 0; j < wo; ++j)
          for (std::int64_t ch = 0; ch < c.in; ++ch)
            for (std::int64_t u = 0; u < c.kernel; ++u)
              for (std::int64_t v = 0; v < c.kernel; ++v) {
                const std::int64_t yi = i * c.stride - c.padding + u;
                const std::int64_t xj = j * c.stride - c.padding + v;
                if (yi < 0 || yi >= c.height || xj < 0 || xj >= c.width) continue;
                ya[n][o][i][j] += xa[n][ch][yi][xj] * wa[o][ch][u][v];
                dxa[n][ch][yi][xj] += ga[n][o][i][j] * wa[o][ch][u][v];
                dwa[o][ch][u][v] += ga[n][o][i][j] * xa[n][ch][yi][xj];
              }
  return r;
}

double relative_error(const at::Tensor& got, const at::Tensor& want) {
  return (got.to(at::kDouble) - want).abs().max().item<double>() /
         std::max(want.abs().max().item<double>(), 1e-30);
}

std::int64_t out_size(std::int64_t size, const Case& c) {
  return (size + 2 * c.padding - c.kernel) / c.stride + 1;
}

TEST(OnednnFloatConv, EqualsPlainLoopsInDoubleAtBothThreadCounts) {
  if (!onednn_float_conv_built()) GTEST_SKIP() << "built without oneDNN";
  const int threads_before = at::get_num_threads();
  torch::manual_seed(11);
  for (const int threads : {1, 2}) {
    at::set_num_threads(threads);
    for (const Case& c : kCases) {
      const at::Tensor x = channels_last(torch::randn({c.batch, c.in, c.height, c.width}));
      const at::Tensor w = torch::randn({c.out, c.in, c.kernel, c.kernel});
      const at::Tensor gy =
          torch::randn({c.batch, c.out, out_size(c.height, c), out_size(c.width, c)});
      const Reference r = reference(x, w, gy, c);
      const at::Tensor y = onednn_conv2d_forward(x, w, c.stride, c.padding);
      const at::Tensor dx = onednn_conv2d_input_grad(gy, w, x.sizes(), c.stride, c.padding);
      const at::Tensor dw = onednn_conv2d_weight_grad(gy, x, w.sizes(), c.stride, c.padding);
      const std::string at = "threads " + std::to_string(threads) + ", in " +
                             std::to_string(c.in) + " kernel " + std::to_string(c.kernel) +
                             " stride " + std::to_string(c.stride);
      ASSERT_EQ(y.sizes(), r.y.sizes()) << at;
      EXPECT_TRUE(y.is_contiguous(at::MemoryFormat::ChannelsLast)) << at;
      EXPECT_TRUE(dx.is_contiguous(at::MemoryFormat::ChannelsLast)) << at;
      EXPECT_TRUE(dw.is_contiguous()) << at;
      EXPECT_LE(relative_error(y, r.y), 1e-5) << at;
      EXPECT_LE(relative_error(dx, r.dx), 1e-5) << at;
      EXPECT_LE(relative_error(dw, r.dw), 1e-5) << at;
    }
  }
  at::set_num_threads(threads_before);
}

// On integer values within 2^24 every order of the same products gives the same sums: the direct
// primitives equal LibTorch's convolution bit for bit there, weights in any layout.
TEST(OnednnFloatConv, EqualsLibTorchBitForBitOnIntegers) {
  if (!onednn_float_conv_built()) GTEST_SKIP() << "built without oneDNN";
  torch::manual_seed(12);
  for (const Case& c : kCases) {
    const auto ints = [](at::IntArrayRef sizes) {
      return torch::randint(-20, 21, sizes).to(at::kFloat);
    };
    const at::Tensor x = channels_last(ints({c.batch, c.in, c.height, c.width}));
    const at::Tensor w = channels_last(ints({c.out, c.in, c.kernel, c.kernel}));  // not oihw
    const at::Tensor gy =
        channels_last(ints({c.batch, c.out, out_size(c.height, c), out_size(c.width, c)}));
    const at::Tensor y_ref =
        at::conv2d(x, w, {}, {c.stride, c.stride}, {c.padding, c.padding});
    auto [dx_ref, dw_ref, unused] = at::convolution_backward(
        gy, x, w, c10::nullopt, {c.stride, c.stride}, {c.padding, c.padding}, {1, 1}, false,
        {0, 0}, 1, {true, true, false});
    EXPECT_TRUE(torch::equal(onednn_conv2d_forward(x, w, c.stride, c.padding), y_ref));
    EXPECT_TRUE(
        torch::equal(onednn_conv2d_input_grad(gy, w, x.sizes(), c.stride, c.padding), dx_ref));
    EXPECT_TRUE(torch::equal(
        onednn_conv2d_weight_grad(gy, x, w.sizes(), c.stride, c.padding), dw_ref.contiguous()));
  }
}

// Passes run side by side on worker threads of one intra-op thread each: each thread keeps its
// own primitives, and two threads convolving at once get what one alone gets.
TEST(OnednnFloatConv, TwoThreadsAtOnceEqualOneAlone) {
  if (!onednn_float_conv_built()) GTEST_SKIP() << "built without oneDNN";
  torch::manual_seed(13);
  const Case c = kCases[1];
  std::vector<at::Tensor> xs, gys;
  for (int t = 0; t < 2; ++t) {
    xs.push_back(channels_last(torch::randn({c.batch, c.in, c.height, c.width})));
    gys.push_back(torch::randn({c.batch, c.out, c.height, c.width}));
  }
  const at::Tensor w = torch::randn({c.out, c.in, c.kernel, c.kernel});
  std::vector<at::Tensor> alone(2), together(2);
  for (int t = 0; t < 2; ++t) {
    alone[t] = onednn_conv2d_weight_grad(gys[t], xs[t], w.sizes(), 1, 1);
  }
  std::vector<std::thread> workers;
  for (int t = 0; t < 2; ++t) {
    workers.emplace_back([&, t] {
      at::set_num_threads(1);
      for (int repeat = 0; repeat < 20; ++repeat) {
        together[t] = onednn_conv2d_weight_grad(gys[t], xs[t], w.sizes(), 1, 1);
      }
    });
  }
  for (auto& worker : workers) worker.join();
  for (int t = 0; t < 2; ++t) {
    EXPECT_LE(relative_error(together[t], alone[t].to(at::kDouble)), 1e-6) << "thread " << t;
  }
}

at::Tensor bf16(const at::Tensor& t) { return t.to(at::kBFloat16); }

// bfloat16 operands: the same integer-valued check against LibTorch's bfloat16 convolution, which
// runs the same oneDNN kernels (the integers below are exact in bfloat16, their products and sums
// exact in float32; only the final rounding of large sums to bfloat16 is inexact, the same
// rounding both ways).
TEST(OnednnFloatConv, Bfloat16EqualsLibTorchBitForBitOnIntegers) {
  if (!onednn_bf16_conv_fast()) GTEST_SKIP() << "no oneDNN bfloat16 kernels on this CPU or build";
  torch::manual_seed(14);
  for (const Case& c : kCases) {
    const auto ints = [](at::IntArrayRef sizes) {
      return torch::randint(-20, 21, sizes).to(at::kBFloat16);
    };
    const at::Tensor x = channels_last(ints({c.batch, c.in, c.height, c.width}));
    const at::Tensor w = channels_last(ints({c.out, c.in, c.kernel, c.kernel}));
    const at::Tensor gy =
        channels_last(ints({c.batch, c.out, out_size(c.height, c), out_size(c.width, c)}));
    const at::Tensor y_ref = at::conv2d(x, w, {}, {c.stride, c.stride}, {c.padding, c.padding});
    auto [dx_ref, dw_ref, unused] = at::convolution_backward(
        gy, x, w, c10::nullopt, {c.stride, c.stride}, {c.padding, c.padding}, {1, 1}, false,
        {0, 0}, 1, {true, true, false});
    const at::Tensor y = onednn_conv2d_forward(x, w, c.stride, c.padding);
    const at::Tensor dx = onednn_conv2d_input_grad(gy, w, x.sizes(), c.stride, c.padding);
    const at::Tensor dw = onednn_conv2d_weight_grad(gy, x, w.sizes(), c.stride, c.padding);
    ASSERT_EQ(y.scalar_type(), at::kBFloat16);
    ASSERT_EQ(dx.scalar_type(), at::kBFloat16);
    ASSERT_EQ(dw.scalar_type(), at::kBFloat16);
    EXPECT_TRUE(torch::equal(y, y_ref)) << "in " << c.in << " kernel " << c.kernel;
    EXPECT_TRUE(torch::equal(dx, dx_ref)) << "in " << c.in << " kernel " << c.kernel;
    EXPECT_TRUE(torch::equal(dw, dw_ref.contiguous())) << "in " << c.in << " kernel " << c.kernel;
  }
}

// bfloat16 operands on random values: float32 sums of the rounded operands' products, rounded to
// bfloat16 once (relative error at most 2^-8 of each value: 8 significant bits, round to nearest;
// plus float32 summation order); the
// float32 operands' weights and output gradients are rounded to bfloat16 here, not by the caller.
TEST(OnednnFloatConv, Bfloat16IsThePlainLoopOfRoundedOperandsRoundedOnce) {
  if (!onednn_bf16_conv_fast()) GTEST_SKIP() << "no oneDNN bfloat16 kernels on this CPU or build";
  torch::manual_seed(15);
  for (const Case& c : kCases) {
    const at::Tensor x = channels_last(bf16(torch::randn({c.batch, c.in, c.height, c.width})));
    const at::Tensor w = torch::randn({c.out, c.in, c.kernel, c.kernel});
    const at::Tensor gy =
        torch::randn({c.batch, c.out, out_size(c.height, c), out_size(c.width, c)});
    const Reference r = reference(x, bf16(w), bf16(gy), c);
    const at::Tensor y = onednn_conv2d_forward(x, w, c.stride, c.padding);
    const at::Tensor dx = onednn_conv2d_input_grad(bf16(gy), w, x.sizes(), c.stride, c.padding);
    const at::Tensor dw = onednn_conv2d_weight_grad(gy, x, w.sizes(), c.stride, c.padding);
    const auto within_one_rounding = [](const at::Tensor& got, const at::Tensor& want) {
      const at::Tensor error = (got.to(at::kDouble) - want).abs();
      const at::Tensor bound = want.abs() * std::ldexp(1.0, -8) + 1e-5 * want.abs().max();
      return (error <= bound).all().item<bool>();
    };
    const std::string at = "in " + std::to_string(c.in) + " kernel " + std::to_string(c.kernel) +
                           " stride " + std::to_string(c.stride);
    EXPECT_TRUE(within_one_rounding(y, r.y)) << at;
    EXPECT_TRUE(within_one_rounding(dx, r.dx)) << at;
    EXPECT_TRUE(within_one_rounding(dw, r.dw)) << at;
    // The outputs are bfloat16 values, not float32 ones stored in a wider type.
    EXPECT_EQ(y.scalar_type(), at::kBFloat16) << at;
    EXPECT_GT(relative_error(y, r.y), 0.0) << at;
  }
}

TEST(OnednnFloatConv, TakesDenseFloatChannelsLastCpuInputsOnly) {
  const at::Tensor x = channels_last(torch::zeros({2, 16, 8, 8}));
  EXPECT_EQ(onednn_float_conv_applies(x, 1, false), onednn_float_conv_built());
  EXPECT_FALSE(onednn_float_conv_applies(x, 2, false));                     // groups
  EXPECT_FALSE(onednn_float_conv_applies(x, 1, true));                      // bias
  EXPECT_FALSE(onednn_float_conv_applies(torch::zeros({2, 16, 8, 8}), 1, false));  // NCHW
  EXPECT_FALSE(onednn_float_conv_applies(x.to(at::kDouble), 1, false));
  EXPECT_EQ(onednn_float_conv_applies(x.to(at::kBFloat16), 1, false), onednn_bf16_conv_fast());
  EXPECT_FALSE(onednn_float_conv_applies(x.to(at::kHalf), 1, false));
  // A one-channel input (a grayscale stem) stays with LibTorch, which runs it faster.
  EXPECT_FALSE(onednn_float_conv_applies(channels_last(torch::zeros({2, 1, 8, 8})), 1, false));
  EXPECT_EQ(onednn_float_conv_applies(channels_last(torch::zeros({2, 3, 8, 8})), 1, false),
            onednn_float_conv_built());
  EXPECT_TRUE(!onednn_bf16_conv_fast() || onednn_float_conv_built());
  EXPECT_FALSE(onednn_float_conv_applies(at::Tensor(), 1, false));
  if (!onednn_float_conv_built()) return;
  // Shapes that do not fit name the problem instead of reading out of bounds.
  EXPECT_THROW(onednn_conv2d_forward(x, torch::zeros({4, 8, 3, 3}), 1, 1), InternalError);
  EXPECT_THROW(onednn_conv2d_input_grad(torch::zeros({2, 4, 7, 7}), torch::zeros({4, 16, 3, 3}),
                                        x.sizes(), 1, 1),
               InternalError);
  EXPECT_THROW(onednn_conv2d_forward(torch::zeros({2, 16, 8, 8}), torch::zeros({4, 16, 3, 3}), 1, 1),
               InternalError);
}

// Winograd (F(4x4, 3x3)) computes the same convolution as the plain loops, within its own
// rounding: its transforms scale partial sums, so its error is larger than the direct kernels'
// (1e-5 above) but still small against the result; and its outputs come back channels-last
// from the blocked layouts its kernels use. Where oneDNN has no Winograd kernel (no AVX-512),
// there is nothing to check but that it says so.
TEST(OnednnFloatConv, WinogradEqualsPlainLoopsWithinItsRounding) {
  const std::vector<Case> cases = {
      {2, 32, 32, 8, 8, 3, 1, 1},   // ResNet-20's second stage, smaller image
      {2, 64, 64, 8, 8, 3, 1, 1},   // its third stage
      {3, 16, 48, 7, 9, 3, 1, 1},   // odd image sizes (partial 4x4 tiles), channels change
  };
  if (!onednn_winograd_available({2, 32, 8, 8}, {32, 32, 3, 3}, 1, 1)) {
    GTEST_SKIP() << "oneDNN has no Winograd convolution on this CPU";
  }
  const int threads_before = at::get_num_threads();
  torch::manual_seed(17);
  double largest_error = 0;
  for (const int threads : {1, 2}) {
    at::set_num_threads(threads);
    for (const Case& c : cases) {
      const at::Tensor x = channels_last(torch::randn({c.batch, c.in, c.height, c.width}));
      const at::Tensor w = torch::randn({c.out, c.in, c.kernel, c.kernel});
      const at::Tensor gy =
          torch::randn({c.batch, c.out, out_size(c.height, c), out_size(c.width, c)});
      ASSERT_TRUE(onednn_winograd_available(x.sizes(), w.sizes(), 1, 1));
      const Reference r = reference(x, w, gy, c);
      constexpr auto kWinograd = OnednnConvAlgorithm::kWinograd;
      const at::Tensor y = onednn_conv2d_forward(x, w, 1, 1, kWinograd);
      const at::Tensor dx = onednn_conv2d_input_grad(gy, w, x.sizes(), 1, 1, kWinograd);
      const at::Tensor dw = onednn_conv2d_weight_grad(gy, x, w.sizes(), 1, 1, kWinograd);
      const std::string at = "threads " + std::to_string(threads) + ", " + std::to_string(c.in) +
                             " -> " + std::to_string(c.out) + " channels, " +
                             std::to_string(c.height) + "x" + std::to_string(c.width);
      EXPECT_TRUE(y.is_contiguous(at::MemoryFormat::ChannelsLast)) << at;
      EXPECT_TRUE(dx.is_contiguous(at::MemoryFormat::ChannelsLast)) << at;
      for (const auto& [got, want] : {std::pair{y, r.y}, {dx, r.dx}, {dw, r.dw}}) {
        const double error = relative_error(got, want);
        EXPECT_LE(error, 2e-5) << at;  // measured: 2e-6 (the direct kernels: 1e-7)
        largest_error = std::max(largest_error, error);
      }
    }
  }
  at::set_num_threads(threads_before);
  RecordProperty("largest_relative_error", std::to_string(largest_error));
}

TEST(OnednnFloatConv, WinogradIsOfferedForThreeByThreeStrideOneOnly) {
  if (!onednn_float_conv_built()) {
    EXPECT_FALSE(onednn_winograd_available({2, 32, 8, 8}, {32, 32, 3, 3}, 1, 1));
    return;
  }
  EXPECT_FALSE(onednn_winograd_available({2, 32, 8, 8}, {64, 32, 3, 3}, 2, 1));  // strided
  EXPECT_FALSE(onednn_winograd_available({2, 32, 8, 8}, {64, 32, 1, 1}, 1, 0));  // 1x1
  // Asked for where oneDNN has none: an error naming the function, not oneDNN's exception.
  const at::Tensor x = channels_last(torch::randn({2, 32, 8, 8}));
  try {
    onednn_conv2d_forward(x, torch::randn({64, 32, 1, 1}), 1, 0, OnednnConvAlgorithm::kWinograd);
    ADD_FAILURE() << "a 1x1 Winograd convolution was made";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("onednn_conv2d_forward: oneDNN has no Winograd"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(onednn_conv2d_forward(x.to(at::kBFloat16), torch::randn({32, 32, 3, 3}), 1, 1,
                                     OnednnConvAlgorithm::kWinograd),
               InternalError);
}

}  // namespace
}  // namespace lpdt
