// The quantizer kernels against a plain scalar reference written from the formulas of
// affine_quantizer.h, on random inputs.
#include "lpdt/quant/affine_quantizer.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>

#include "lpdt/core/cpu_dispatch.h"
#include "lpdt/quant/fake_quant_ops.h"
#include "lpdt/quant/stochastic_draws.h"

namespace lpdt::quant {
namespace {

// One node's elements in its own channels-last order: [b, k*C, H, W] -> node i's [b*H*W*C].
at::Tensor node_elements(const at::Tensor& x, std::int64_t k, std::int64_t i) {
  const auto b = x.size(0), c = x.size(1) / k, h = x.size(2), w = x.size(3);
  return x.view({b, k, c, h, w}).select(1, i).permute({0, 2, 3, 1}).contiguous().view(-1);
}

// The scalar reference: the documented formulas, element by element, in float as the kernel.
at::Tensor reference_fake_quantize(const at::Tensor& elements, float min, float max, int bits,
                                   QuantScheme scheme, bool stochastic, std::uint64_t stream) {
  const double qmax = std::pow(2.0, bits) - 1.0;
  float scale, zero_point = 0.0f;
  if (scheme == QuantScheme::kReference) {
    scale = static_cast<float>(std::max((double(max) - min) / qmax, 1e-8));
  } else {
    const double lo = std::min<double>(min, 0.0), hi = std::max<double>(max, 0.0);
    scale = static_cast<float>(std::max((hi - lo) / qmax, 1e-8));
    zero_point = static_cast<float>(std::clamp(std::nearbyint(-lo / scale), 0.0, qmax));
  }
  at::Tensor out = at::empty_like(elements);
  const float* x = elements.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (std::int64_t e = 0; e < elements.numel(); ++e) {
    float y = scheme == QuantScheme::kReference ? (x[e] - min) / scale : x[e] / scale + zero_point;
    if (stochastic) y += centered_uniform(stream, static_cast<std::uint64_t>(e));
    y = std::min(std::max(y, 0.0f), static_cast<float>(qmax));
    const float q = std::nearbyint(y);
    o[e] = scheme == QuantScheme::kReference ? q * scale + min : (q - zero_point) * scale;
  }
  return out;
}

at::Tensor random_activation(std::int64_t b, std::int64_t kc, std::int64_t h, std::int64_t w,
                             std::int64_t seed) {
  torch::manual_seed(seed);
  return (torch::randn({b, kc, h, w}) * 2.0 + 0.3).contiguous(at::MemoryFormat::ChannelsLast);
}

struct Case {
  int bits;
  QuantScheme scheme;
  Rounding rounding;
};

class FakeQuantizeVsReference : public ::testing::TestWithParam<Case> {};

// At every vector level this CPU runs (core/cpu_dispatch.h): the AVX2 and baseline kernels are
// checked on an AVX-512 machine too.
TEST_P(FakeQuantizeVsReference, EveryElementOfEveryNode) {
  const Case c = GetParam();
  for (const SimdLevel level : cpu_simd_levels()) {
    ScopedSimdLevel scoped(level);
    SCOPED_TRACE(simd_level_name(level));
    // Channels per node with 3 nodes: shorter than the kernels' 16-element chunks, exactly one
    // chunk, and two chunks plus a remainder (each pixel's channels are one strided run of the
    // block); a node alone: its block is one long run (the kernels' plain loops).
    for (const auto& [k, channels] :
         {std::pair<std::int64_t, std::int64_t>{3, 5}, {3, 16}, {3, 37}, {1, 37}}) {
      const at::Tensor x = random_activation(2, k * channels, 3, 7, 11);
      QuantizeRequest request{c.bits, c.scheme, c.rounding, DrawKey{42, 7, 4}, 3};
      const NodeRange range = tensor_range(x, k);
      const at::Tensor out = fake_quantize(x, k, range, request);
      for (std::int64_t i = 0; i < k; ++i) {
        const at::Tensor xi = node_elements(x, k, i);
        const float lo = xi.min().item<float>(), hi = xi.max().item<float>();
        EXPECT_EQ(range.min[i].item<float>(), lo);
        EXPECT_EQ(range.max[i].item<float>(), hi);
        const at::Tensor expected = reference_fake_quantize(
            xi, lo, hi, c.bits, c.scheme, c.rounding == Rounding::kStochastic,
            draw_stream(request.key, i, request.site));
        EXPECT_TRUE(at::equal(node_elements(out, k, i), expected))
            << "node " << i << " of " << k << ", " << channels << " channels";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SchemesBitsRoundings, FakeQuantizeVsReference,
                         ::testing::Values(Case{8, QuantScheme::kGemmlowp, Rounding::kNearest},
                                           Case{8, QuantScheme::kGemmlowp, Rounding::kStochastic},
                                           Case{8, QuantScheme::kReference, Rounding::kNearest},
                                           Case{8, QuantScheme::kReference, Rounding::kStochastic},
                                           Case{4, QuantScheme::kGemmlowp, Rounding::kStochastic},
                                           Case{16, QuantScheme::kReference, Rounding::kNearest}));

// Node-leading tensors (parameters [k, C] and [k, out, in, kh, kw], a linear layer's input
// [k, b, F]): every node's range, fake-quantized values and codes against the reference on that
// node's elements in order, stochastic and nearest. The whole-node operations loop over a node's
// short "samples" as one run; the element indices (and so the draws) must not change.
TEST(FakeQuantize, NodeLeadingTensorsMatchTheReference) {
  for (const SimdLevel level : cpu_simd_levels()) {
    ScopedSimdLevel scoped(level);
    SCOPED_TRACE(simd_level_name(level));
    torch::manual_seed(31);
    const std::vector<std::vector<std::int64_t>> shapes = {
        {3, 37}, {1, 64}, {3, 5, 4, 3, 3}, {2, 16, 16, 3, 3}, {2, 4, 300}};
    for (const auto& shape : shapes) {
      const at::Tensor x = torch::randn(shape) * 1.5 + 0.2;
      const std::int64_t k = shape[0];
      for (Rounding rounding : {Rounding::kNearest, Rounding::kStochastic}) {
        const QuantizeRequest request{8, QuantScheme::kGemmlowp, rounding, DrawKey{5, 3, 1}, 9};
        const NodeRange range = tensor_range(x, k);
        const at::Tensor out = fake_quantize(x, k, range, request);
        const at::Tensor codes_back = dequantize(quantize(x, k, range, request), k);
        for (std::int64_t i = 0; i < k; ++i) {
          const at::Tensor xi = x[i].contiguous().view(-1);
          const float lo = xi.min().item<float>(), hi = xi.max().item<float>();
          ASSERT_EQ(range.min[i].item<float>(), lo) << "shape " << x.sizes() << ", node " << i;
          ASSERT_EQ(range.max[i].item<float>(), hi) << "shape " << x.sizes() << ", node " << i;
          const at::Tensor expected = reference_fake_quantize(
              xi, lo, hi, 8, QuantScheme::kGemmlowp, rounding == Rounding::kStochastic,
              draw_stream(request.key, i, request.site));
          EXPECT_TRUE(at::equal(out[i].contiguous().view(-1), expected))
              << "shape " << x.sizes() << ", node " << i;
          EXPECT_TRUE(at::equal(codes_back[i].contiguous().view(-1), expected))
              << "codes, shape " << x.sizes() << ", node " << i;
        }
      }
    }
  }
}

TEST(AffineParams, GemmlowpRepresentsZeroExactly) {
  torch::manual_seed(1);
  for (int trial = 0; trial < 200; ++trial) {
    const float lo = -std::abs(torch::randn({1}).item<float>()) * 3.0f;
    const float hi = std::abs(torch::randn({1}).item<float>()) * 5.0f;
    const AffineParams p = affine_params(lo, hi, 8, QuantScheme::kGemmlowp);
    EXPECT_EQ(p.zero_point, std::nearbyint(p.zero_point));
    EXPECT_EQ(p.dequantize(p.zero_point), 0.0f);
    EXPECT_EQ(std::nearbyint(p.quantize(0.0f)), p.zero_point);
  }
  // A range that excludes 0 is widened to include it.
  const AffineParams positive = affine_params(2.0f, 4.0f, 8, QuantScheme::kGemmlowp);
  EXPECT_EQ(positive.zero_point, 0.0f);
  EXPECT_FLOAT_EQ(positive.scale, 4.0f / 255.0f);
}

TEST(FakeQuantize, UsesAtMostTwoToTheBitsValuesPerNode) {
  const std::int64_t k = 2;
  const at::Tensor x = random_activation(8, k * 16, 8, 8, 3);
  for (int bits : {2, 4, 8}) {
    QuantizeRequest request{bits, QuantScheme::kGemmlowp, Rounding::kStochastic, DrawKey{1, 0, 0},
                            0};
    const at::Tensor out = fake_quantize(x, k, tensor_range(x, k), request);
    for (std::int64_t i = 0; i < k; ++i) {
      const auto distinct = std::get<0>(at::_unique(node_elements(out, k, i))).numel();
      EXPECT_LE(distinct, std::int64_t{1} << bits) << bits << " bits";
      EXPECT_GT(distinct, (std::int64_t{1} << bits) / 2) << bits << " bits";
    }
  }
}

TEST(StochasticRounding, IsUnbiased) {
  // Values strictly between grid points: the mean of many independent roundings converges to
  // the value; round-to-nearest does not.
  const std::int64_t n = 64, draws = 4000;
  const at::Tensor x = at::linspace(-0.9, 0.95, n).reshape({1, n});  // one node
  const NodeRange range{at::full({1}, -1.0f), at::full({1}, 1.0f)};
  at::Tensor sum = at::zeros({1, n}, at::kDouble);
  for (std::int64_t t = 0; t < draws; ++t) {
    QuantizeRequest request{4, QuantScheme::kGemmlowp, Rounding::kStochastic, DrawKey{5, t, 0}, 1};
    sum += fake_quantize(x, 1, range, request).to(at::kDouble);
  }
  const at::Tensor mean = sum / static_cast<double>(draws);
  const double step = 2.0 / 15.0;  // 4 bits over [-1, 1]
  // Each rounding is a Bernoulli over one step: std of the mean <= step / (2 sqrt(draws)).
  const double tolerance = 5.0 * step / (2.0 * std::sqrt(static_cast<double>(draws)));
  EXPECT_LT((mean - x.to(at::kDouble)).abs().max().item<double>(), tolerance);
  QuantizeRequest nearest{4, QuantScheme::kGemmlowp, Rounding::kNearest, {}, 0};
  EXPECT_GT((fake_quantize(x, 1, range, nearest) - x).abs().max().item<double>(), tolerance);
}

// The counter-based draws behave as independent uniforms: a flat histogram within a stream, no
// correlation between neighbouring elements, and none between two sites' streams at the same or
// nearby elements (a weak mix, e.g. a multiply-xor of the index without the finalising rounds,
// fails the correlation checks).
TEST(StochasticRounding, DrawsAreUniformAndUncorrelated) {
  constexpr std::uint64_t n = 1u << 18;
  constexpr int bins = 64;
  const std::uint64_t a = draw_stream(DrawKey{3, 7, 0}, 0, 4);
  const std::uint64_t b = draw_stream(DrawKey{3, 7, 0}, 0, 5);
  std::vector<double> count(bins, 0.0);
  double sum = 0.0, squares = 0.0, lag1 = 0.0, cross = 0.0, cross_lag = 0.0;
  float previous = centered_uniform(a, n - 1);
  for (std::uint64_t e = 0; e < n; ++e) {
    const float u = centered_uniform(a, e), v = centered_uniform(b, e);
    ASSERT_GE(u, -0.5f);
    ASSERT_LT(u, 0.5f);
    count[static_cast<int>((u + 0.5f) * bins)] += 1.0;
    sum += u;
    squares += u * u;
    lag1 += u * previous;
    cross += u * v;
    cross_lag += u * centered_uniform(b, e + 1);
    previous = u;
  }
  double chi2 = 0.0;
  const double expected = static_cast<double>(n) / bins;
  for (double c : count) chi2 += (c - expected) * (c - expected) / expected;
  // 63 degrees of freedom: the 99.99th percentile is about 115.
  EXPECT_LT(chi2, 115.0);
  // Means of n products of independent uniforms: std 1/12 / sqrt(n) ~ 1.6e-4; 6 sigma.
  const double tolerance = 6.0 / 12.0 / std::sqrt(static_cast<double>(n));
  EXPECT_NEAR(sum / n, 0.0, 6.0 * std::sqrt(1.0 / 12.0 / n));
  EXPECT_NEAR(squares / n, 1.0 / 12.0, 1e-3);
  EXPECT_NEAR(lag1 / n, 0.0, tolerance) << "neighbouring elements";
  EXPECT_NEAR(cross / n, 0.0, tolerance) << "two sites, same element";
  EXPECT_NEAR(cross_lag / n, 0.0, tolerance) << "two sites, next element";
}

// The vectorised window of draws the quantizers use equals the scalar definition element by
// element, from even and odd first indices (a window starting inside a pair) and for windows that
// are not multiples of the vector width.
TEST(StochasticRounding, WindowsOfDrawsEqualTheScalarDraws) {
  const std::uint64_t stream = draw_stream(DrawKey{11, 2, 5}, 1, 7);
  std::vector<float> window(kMaxDrawsAtOnce);
  for (const SimdLevel level : cpu_simd_levels()) {
    ScopedSimdLevel scoped(level);
    SCOPED_TRACE(simd_level_name(level));
    for (std::uint64_t index0 : {0ull, 1ull, 6ull, 17ull, (1ull << 33) + 3, ~0ull - 300}) {
      for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{15}, std::int64_t{16},
                             std::int64_t{33}, kMaxDrawsAtOnce}) {
        std::fill(window.begin(), window.end(), 7.0f);
        centered_uniforms(stream, index0, n, window.data());
        for (std::int64_t e = 0; e < n; ++e) {
          ASSERT_EQ(window[e], centered_uniform(stream, index0 + static_cast<std::uint64_t>(e)))
              << "index0 " << index0 << ", n " << n << ", element " << e;
        }
        for (std::int64_t e = n; e < kMaxDrawsAtOnce; ++e) ASSERT_EQ(window[e], 7.0f) << "past n";
      }
    }
  }
  EXPECT_THROW(centered_uniforms(stream, 0, kMaxDrawsAtOnce + 1, window.data()), std::exception);
}

TEST(StochasticRounding, DrawsDoNotDependOnHowNodesAreGrouped) {
  const std::int64_t k = 4;
  const at::Tensor x = random_activation(3, k * 6, 5, 5, 9);
  const DrawKey key{77, 12, 8};  // nodes 8..11 of a larger run
  QuantizeRequest all{8, QuantScheme::kGemmlowp, Rounding::kStochastic, key, 2};
  const at::Tensor together = fake_quantize(x, k, tensor_range(x, k), all);
  for (std::int64_t i = 0; i < k; ++i) {
    const at::Tensor xi = x.narrow(1, i * 6, 6).contiguous(at::MemoryFormat::ChannelsLast);
    QuantizeRequest alone = all;
    alone.key.first_node = key.first_node + i;
    const at::Tensor single = fake_quantize(xi, 1, tensor_range(xi, 1), alone);
    EXPECT_TRUE(at::equal(single, together.narrow(1, i * 6, 6))) << "node " << i;
  }
  // A different step draws differently.
  QuantizeRequest later = all;
  later.key.step += 1;
  EXPECT_FALSE(at::equal(together, fake_quantize(x, k, tensor_range(x, k), later)));
}

TEST(Quantize, CodesDequantizeToTheFakeQuantizedValues) {
  for (const SimdLevel level : cpu_simd_levels()) {
    ScopedSimdLevel scoped(level);
    SCOPED_TRACE(simd_level_name(level));
    // Below, at and past a 16-element chunk, and one long run (a node alone).
    for (const auto& [k, channels] :
         {std::pair<std::int64_t, std::int64_t>{3, 8}, {3, 16}, {3, 37}, {1, 37}}) {
      const at::Tensor x = random_activation(4, k * channels, 6, 6, 21);
      QuantizeRequest request{8, QuantScheme::kGemmlowp, Rounding::kStochastic, DrawKey{3, 1, 0},
                              5};
      const NodeRange range = sample_mean_range(x, k);
      const QuantizedTensor q = quantize(x, k, range, request);
      EXPECT_EQ(q.codes.scalar_type(), at::kByte);
      EXPECT_TRUE(at::equal(dequantize(q, k), fake_quantize(x, k, range, request)))
          << k << " nodes, " << channels << " channels";
    }
  }
}

// A NaN input (a model whose weights went NaN) is code 0, defined, at every vector level and in
// short and long rows; its neighbours keep their codes. (Converting a NaN to uint8_t is
// undefined behaviour.)
TEST(Quantize, ANanInputIsCodeZero) {
  for (const SimdLevel level : cpu_simd_levels()) {
    ScopedSimdLevel scoped(level);
    SCOPED_TRACE(simd_level_name(level));
    for (const std::int64_t channels : {8, 37}) {
      const at::Tensor x = random_activation(4, channels, 6, 6, 23);
      const NodeRange range = tensor_range(x, 1);
      for (Rounding rounding : {Rounding::kStochastic, Rounding::kNearest}) {
        QuantizeRequest request{8, QuantScheme::kGemmlowp, rounding, DrawKey{3, 1, 0}, 5};
        const QuantizedTensor clean = quantize(x, 1, range, request);
        at::Tensor with_nan = x.clone();
        with_nan[1][3][2][4] = std::nanf("");
        const QuantizedTensor q = quantize(with_nan, 1, range, request);
        EXPECT_EQ(q.codes[1][3][2][4].item<int>(), 0) << channels << " channels";
        at::Tensor expected = clean.codes.clone();
        expected[1][3][2][4] = 0;
        EXPECT_TRUE(at::equal(q.codes, expected)) << channels << " channels";
      }
    }
  }
}

TEST(Quantize, SampleBySampleEqualsTheWholeTensor) {
  // The per-sample entry points the fused Range EvoNorm reads through: sample n of every node,
  // into a buffer with the tensor's strides, must hold what the whole-tensor calls write there.
  for (const auto& [k, channels] :
       {std::pair<std::int64_t, std::int64_t>{3, 16}, {2, 37}, {1, 37}}) {
    const std::int64_t b = 4;
    const at::Tensor x = random_activation(b, k * channels, 5, 6, 22);
    const NodeView v = node_view(x, k);
    for (Rounding rounding : {Rounding::kStochastic, Rounding::kNearest}) {
      QuantizeRequest request{8, QuantScheme::kGemmlowp, rounding, DrawKey{7, 2, 0}, 9};
      const NodeRange range = tensor_range(x, k);
      const at::Tensor whole = fake_quantize(x, k, range, request);
      const QuantizedTensor q = quantize(x, k, range, request);
      const at::Tensor dequantized = dequantize(q, k);
      const SampleQuantizer quantizer(v, range, request);
      at::Tensor by_sample = at::full_like(x, std::nanf("")),
                 dequantized_by_sample = at::full_like(x, std::nanf(""));
      for (std::int64_t n = 0; n < b; ++n) {
        const std::int64_t first = n * v.sample_stride;
        quantizer.fake_quantize_sample(x.data_ptr<float>() + first,
                                       by_sample.data_ptr<float>() + first, n);
        dequantize_sample(q, v, n, dequantized_by_sample.data_ptr<float>() + first);
      }
      EXPECT_TRUE(at::equal(by_sample, whole)) << k << " nodes, " << channels << " channels";
      EXPECT_TRUE(at::equal(dequantized_by_sample, dequantized))
          << k << " nodes, " << channels << " channels";
    }
  }
}

TEST(Ranges, SampleMeanRangeMatchesTheReferenceDefinition) {
  const std::int64_t k = 2;
  const at::Tensor x = random_activation(5, k * 4, 3, 3, 4);
  const NodeRange range = sample_mean_range(x, k);
  const at::Tensor per_node = x.view({5, k, 4, 3, 3}).flatten(2);  // [b, k, C*H*W]
  const at::Tensor expected_min = std::get<0>(per_node.min(2)).mean(0);
  const at::Tensor expected_max = std::get<0>(per_node.max(2)).mean(0);
  EXPECT_TRUE(at::allclose(range.min, expected_min, 1e-6, 1e-6));
  EXPECT_TRUE(at::allclose(range.max, expected_max, 1e-6, 1e-6));
  // Node-leading [k, b, F] tensors: samples are dim 1.
  const at::Tensor flat = torch::randn({k, 6, 10});
  const NodeRange r2 = sample_mean_range(flat, k);
  EXPECT_TRUE(at::allclose(r2.max, std::get<0>(flat.max(2)).mean(1), 1e-6, 1e-6));
}

// The running range's update (the reference's QuantMeasure): running * (1 - m) + m * range, in
// place, for [k] buffers and for strided [k] views (ranges kept as parameters).
TEST(Ranges, SampleMeanRangeUpdatingMovesTheRunningRange) {
  const std::int64_t k = 3;
  const at::Tensor x = random_activation(4, k * 2, 5, 5, 7);
  const double m = 0.25;
  const at::Tensor storage = torch::randn({k, 4});
  const at::Tensor before_min = storage.select(1, 0).clone(), before_max = torch::randn({k});
  at::Tensor run_min = storage.select(1, 0), run_max = before_max.clone();
  const NodeRange range = sample_mean_range_updating(x, k, run_min, run_max, m);
  const NodeRange expected = sample_mean_range(x, k);
  EXPECT_TRUE(at::equal(range.min, expected.min));
  EXPECT_TRUE(at::equal(range.max, expected.max));
  EXPECT_TRUE(at::allclose(run_min, before_min * (1 - m) + expected.min * m, 1e-6, 1e-6));
  EXPECT_TRUE(at::allclose(run_max, before_max * (1 - m) + expected.max * m, 1e-6, 1e-6));
  EXPECT_TRUE(at::equal(storage.select(1, 0), run_min));  // in place, in the storage
  EXPECT_FALSE(at::equal(run_min, before_min));
}

// Tensors fake-quantized at once (a model's parameters): each the per-tensor fake-quantization of
// its own values, in its own strides (a channels-last convolution weight too), straight-through
// gradients; tensors whose nodes' values are not dense blocks are refused.
TEST(FakeQuantizeEach, EachTensorIsQuantizedWithItsOwnRange) {
  const std::int64_t k = 3;
  torch::manual_seed(11);
  const at::Tensor weight = torch::randn({k, 4, 2, 3, 3})
                                .reshape({k * 4, 2, 3, 3})
                                .contiguous(at::MemoryFormat::ChannelsLast)
                                .view({k, 4, 2, 3, 3});
  const std::vector<at::Tensor> tensors{torch::randn({k, 7}) * 5.0, torch::randn({k}),
                                        torch::randn({k, 0}), weight * 0.1};
  ASSERT_FALSE(tensors[3].is_contiguous());
  for (const auto& [bits, scheme] :
       {std::pair{8, QuantScheme::kGemmlowp}, std::pair{4, QuantScheme::kReference}}) {
    const std::vector<at::Tensor> each = fake_quantize_each_nearest(tensors, k, bits, scheme);
    QuantizeRequest request;
    request.bits = bits;
    request.scheme = scheme;
    ASSERT_EQ(each.size(), tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      EXPECT_EQ(each[i].strides(), tensors[i].strides()) << i;
      if (tensors[i].numel() == 0) continue;
      const at::Tensor flat = tensors[i].reshape({k, -1});
      EXPECT_TRUE(at::equal(each[i].reshape({k, -1}),
                            fake_quantize(flat, k, tensor_range(flat, k), request)))
          << "tensor " << i << ", " << bits << " bits";
    }
  }
  // Each tensor its own range: the small-valued tensor keeps its resolution.
  const at::Tensor joint = at::cat({tensors[0], tensors[3].reshape({k, -1})}, 1);
  const at::Tensor joint_q = fake_quantize(joint, k, tensor_range(joint, k), QuantizeRequest{});
  EXPECT_FALSE(at::equal(
      fake_quantize_each_nearest(tensors, k, 8, QuantScheme::kGemmlowp)[3].reshape({k, -1}),
      joint_q.narrow(1, 7, 72)));
  std::vector<at::Tensor> leaves;
  for (const at::Tensor& t : tensors) leaves.push_back(t.detach().clone().requires_grad_(true));
  const std::vector<at::Tensor> out = fake_quantize_each_ste(leaves, k, 8, QuantScheme::kGemmlowp);
  const at::Tensor probe = torch::randn({k, 7});
  (out[0] * probe).sum().backward();  // the other outputs unused: no gradient for them
  EXPECT_TRUE(at::equal(leaves[0].grad(), probe));
  EXPECT_FALSE(leaves[1].grad().defined());
  EXPECT_THROW(fake_quantize_each_nearest({torch::randn({k, 10}).narrow(1, 0, 5)}, k, 8,
                                          QuantScheme::kGemmlowp),
               std::exception);
}

TEST(FakeQuantOps, StraightThroughAndGradientQuantization) {
  const std::int64_t k = 2;
  const at::Tensor x = torch::randn({k, 4, 9}).requires_grad_(true);
  QuantizeRequest request{8, QuantScheme::kGemmlowp, Rounding::kNearest, DrawKey{1, 2, 0}, 4};
  const at::Tensor probe = torch::randn({k, 4, 9});
  (fake_quantize_ste(x, k, tensor_range(x.detach(), k), request) * probe).sum().backward();
  EXPECT_TRUE(at::equal(x.grad(), probe));  // straight-through: no clipping mask

  const at::Tensor y = x.detach().clone().requires_grad_(true);
  const at::Tensor out = quantize_gradient(y, k, request);
  EXPECT_TRUE(at::equal(out, y));  // identity forward
  (out * probe).sum().backward();
  QuantizeRequest stochastic = request;
  stochastic.rounding = Rounding::kStochastic;
  EXPECT_TRUE(at::equal(y.grad(), fake_quantize(probe, k, tensor_range(probe, k), stochastic)));
  EXPECT_FALSE(at::equal(y.grad(), probe));
}

TEST(FakeQuantOps, QuantizedSumIsTheThreeOperations) {
  // The reference's Qsum: both summands fake-quantized (own ranges, own draws), added, and the
  // sum's gradient quantized. The fused CPU operation (4-D) and the fallback (node-leading) must
  // give the composition's values and gradients bit for bit.
  const std::int64_t k = 2;
  for (const std::vector<std::int64_t>& shape :
       {std::vector<std::int64_t>{3, k * 16, 5, 6}, std::vector<std::int64_t>{k, 3, 20}}) {
    const bool image = shape.size() == 4;
    const auto make = [&](std::uint64_t seed) {
      torch::manual_seed(seed);
      at::Tensor t = torch::randn(shape) * (1.0 + seed);
      return image ? t.contiguous(at::MemoryFormat::ChannelsLast) : t;
    };
    const at::Tensor a0 = make(1), b0 = make(2), probe = make(3);
    QuantizeRequest ra{8, QuantScheme::kGemmlowp, Rounding::kStochastic, DrawKey{5, 3, 0}, 11};
    QuantizeRequest rb = ra, rg = ra;
    rb.site = 12;
    rg.site = 13;
    const NodeRange range_a = sample_mean_range(a0, k), range_b = sample_mean_range(b0, k);
    std::vector<at::Tensor> sums, grads_a, grads_b;
    for (bool fused : {false, true}) {
      const at::Tensor a = a0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
      const at::Tensor sum = fused ? fake_quantized_sum(a, range_a, ra, b, range_b, rb, k, rg)
                                   : quantize_gradient(fake_quantize_ste(a, k, range_a, ra) +
                                                           fake_quantize_ste(b, k, range_b, rb),
                                                       k, rg);
      (sum * probe).sum().backward();
      sums.push_back(sum.detach());
      grads_a.push_back(a.grad());
      grads_b.push_back(b.grad());
    }
    EXPECT_TRUE(at::equal(sums[1], sums[0])) << shape.size() << "-D forward";
    EXPECT_TRUE(at::equal(grads_a[1], grads_a[0])) << shape.size() << "-D gradient of a";
    EXPECT_TRUE(at::equal(grads_b[1], grads_b[0])) << shape.size() << "-D gradient of b";
    EXPECT_FALSE(at::equal(grads_a[1], probe));  // the gradient is quantized
  }
}

}  // namespace
}  // namespace lpdt::quant
