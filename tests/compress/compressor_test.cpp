// Compressors: the batched layer-wise top-k / random-k against plain per-node, per-layer loops.
#include "lpdt/compress/compressor.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "lpdt/compress/identity.h"
#include "lpdt/compress/random_k.h"
#include "lpdt/compress/top_k.h"
#include "lpdt/core/error.h"
#include "lpdt/core/rng.h"

namespace lpdt::compress {
namespace {

LayerLayout test_layout() {
  LayerLayout layout;
  layout.append("bias1", {1});
  layout.append("small", {2});
  layout.append("conv", {7, 3});
  layout.append("odd", {13});
  layout.append("fc", {10, 33});
  layout.append("big", {1000});
  return layout;
}

// [n, P] float32 whose entries have pairwise distinct magnitudes and random signs, so top-k has
// no ties and the batched result must equal any correct reference exactly.
torch::Tensor distinct_values(std::int64_t n, std::int64_t p, std::uint64_t seed) {
  torch::manual_seed(seed);
  const auto magnitude = (torch::randperm(n * p, torch::kLong).to(torch::kFloat) + 1.0f) / 64.0f;
  const auto sign = torch::randint(0, 2, {n * p}).to(torch::kFloat).mul(2).sub(1);
  return (magnitude * sign).reshape({n, p});
}

// Plain reference: node by node, segment by segment, stable sort by |x| descending (ties: lower
// index first, so K == 1 takes the first maximum), keep K.
torch::Tensor reference_top_k(const torch::Tensor& v, const LayerLayout& layout, double keep) {
  auto out = torch::zeros_like(v);
  const auto in = v.accessor<float, 2>();
  auto acc = out.accessor<float, 2>();
  for (std::int64_t node = 0; node < v.size(0); ++node) {
    for (const auto& seg : layout.segments) {
      std::vector<std::int64_t> order(seg.numel);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
        return std::abs(in[node][seg.offset + a]) > std::abs(in[node][seg.offset + b]);
      });
      const std::int64_t k = kept_count(seg.numel, keep);
      for (std::int64_t r = 0; r < k; ++r) {
        const std::int64_t c = seg.offset + order[r];
        acc[node][c] = in[node][c];
      }
    }
  }
  return out;
}

TEST(KeptCount, OfficialRule) {
  EXPECT_EQ(kept_count(1, 0.01), 1);    // 1-element tensors always sent in full
  EXPECT_EQ(kept_count(432, 0.01), 4);  // int(4.32)
  EXPECT_EQ(kept_count(99, 0.01), 1);   // max(1, int(0.99))
  EXPECT_EQ(kept_count(1000, 1.0), 1000);
  EXPECT_EQ(kept_count(2304, 0.5), 1152);
  // keep_from_drop reproduces the official double arithmetic int(numel * (1 - k)):
  // 20 * (1 - 0.9) = 1.9999999999999996 -> 1, while 20 * 0.1 = 2.
  EXPECT_EQ(kept_count(20, keep_from_drop(0.9)), 1);
  EXPECT_EQ(kept_count(20, 0.1), 2);
  for (std::int64_t numel : {16, 432, 2304, 4608, 9216, 36864, 640, 10}) {
    EXPECT_EQ(kept_count(numel, keep_from_drop(0.99)),
              std::max<std::int64_t>(1, static_cast<std::int64_t>(numel * (1 - 0.99))));
  }
}

TEST(KeptCount, LayoutTotals) {
  const auto layout = test_layout();
  const auto kept = kept_per_segment(layout, 0.1);
  EXPECT_EQ(kept, (std::vector<std::int64_t>{1, 1, 2, 1, 33, 100}));
  EXPECT_EQ(kept_values(layout, 0.1), 138);
  EXPECT_EQ(kept_values(layout, 1.0), layout.total_numel);
}

TEST(Factory, NamesAndErrors) {
  EXPECT_EQ(make_compressor(CompressorOptions())->name(), "none");
  EXPECT_EQ(make_compressor(CompressorOptions().name("topk").keep_fraction(0.01))->name(), "topk");
  EXPECT_EQ(make_compressor(CompressorOptions().name("randomk").keep_fraction(0.5))->name(),
            "randomk");
  EXPECT_THROW(make_compressor(CompressorOptions().name("qsgd")), ConfigError);
  for (double bad : {0.0, -0.1, 1.5}) {
    EXPECT_THROW(make_compressor(CompressorOptions().name("topk").keep_fraction(bad)), ConfigError);
    EXPECT_THROW(make_compressor(CompressorOptions().name("randomk").keep_fraction(bad)),
                 ConfigError);
  }
  try {
    make_compressor(CompressorOptions().name("topk").keep_fraction(1.3));
    FAIL() << "no exception";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("1.3"), std::string::npos) << e.what();
  }
}

TEST(Identity, ReturnsInputDense) {
  const auto layout = test_layout();
  const auto v = torch::randn({3, layout.total_numel});
  IdentityCompressor c;
  const auto out = c.compress(v, layout, 0);
  EXPECT_TRUE(out.dense.is_same(v));
  EXPECT_FALSE(out.sent.sparse);
  EXPECT_EQ(out.sent.values, layout.total_numel);
}

TEST(TopK, BatchedEqualsPerNodeLoop) {
  const auto layout = test_layout();
  for (double keep : {0.01, 0.1, 0.37, 0.5, 1.0}) {
    for (std::uint64_t seed : {1, 2, 3}) {
      const auto v = distinct_values(5, layout.total_numel, seed);
      TopKCompressor c(keep);
      const auto out = c.compress(v, layout, 0);
      EXPECT_TRUE(torch::equal(out.dense, reference_top_k(v, layout, keep)))
          << "keep " << keep << " seed " << seed;
      EXPECT_TRUE(out.sent.sparse);
      EXPECT_EQ(out.sent.kept_per_segment, kept_per_segment(layout, keep));
      EXPECT_EQ(out.sent.values, kept_values(layout, keep));
      // Every row keeps exactly V values (inputs have no zeros).
      EXPECT_TRUE(
          torch::equal(out.dense.ne(0).sum(1), torch::full({5}, out.sent.values, torch::kLong)));
    }
  }
}

TEST(TopK, SingleValueTakesFirstMaximum) {
  LayerLayout layout;
  layout.append("w", {6});
  const auto v =
      torch::tensor({1.0f, -3.0f, 3.0f, 2.0f, -3.0f, 0.5f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f})
          .reshape({2, 6});
  TopKCompressor c(0.1);  // K = max(1, int(0.6)) = 1
  const auto out = c.compress(v, layout, 0);
  const auto expected =
      torch::tensor({0.0f, -3.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f})
          .reshape({2, 6});
  EXPECT_TRUE(torch::equal(out.dense, expected)) << out.dense;
  EXPECT_TRUE(torch::equal(out.dense, reference_top_k(v, layout, 0.1)));
}

TEST(TopK, ErrorFeedbackLosesNoMass) {
  // DeepSqueeze's loop v = u + e; c = C(v); e = v - c. Every round c + e_new == v bit for bit
  // (e = v - c is exact: c is v or 0 elementwise), and over R rounds
  // sum_t sent_t + e_R == sum_t u_t up to the rounding of v = u + e.
  const auto layout = test_layout();
  TopKCompressor c(0.05);
  torch::manual_seed(7);
  auto e = torch::zeros({4, layout.total_numel});
  auto sum_inputs = torch::zeros({4, layout.total_numel}, torch::kDouble);
  auto sum_sent = torch::zeros({4, layout.total_numel}, torch::kDouble);
  for (int round = 0; round < 60; ++round) {
    const auto u = torch::randn({4, layout.total_numel});
    const auto v = u + e;
    const auto out = c.compress(v, layout, round);
    e = v - out.dense;
    ASSERT_TRUE(torch::equal(out.dense + e, v)) << "round " << round;
    sum_inputs += u.to(torch::kDouble);
    sum_sent += out.dense.to(torch::kDouble);
  }
  const auto residual = (sum_sent + e.to(torch::kDouble) - sum_inputs).abs().max().item<double>();
  EXPECT_LT(residual, 1e-4);                     // 60 float additions of O(10) values
  EXPECT_GT(e.abs().sum().item<double>(), 1.0);  // the error buffer really holds mass
}

TEST(RandomK, SampleIndicesDistinctAndUniform) {
  Rng rng(11);
  constexpr std::int64_t kNumel = 20;
  constexpr std::int64_t kK = 5;
  constexpr int kDraws = 20000;
  std::vector<int> hits(kNumel, 0);
  for (int d = 0; d < kDraws; ++d) {
    const auto idx = RandomKCompressor::sample_indices(kNumel, kK, rng);
    ASSERT_EQ(static_cast<std::int64_t>(idx.size()), kK);
    std::set<std::int64_t> unique(idx.begin(), idx.end());
    ASSERT_EQ(static_cast<std::int64_t>(unique.size()), kK);
    for (auto i : idx) {
      ASSERT_GE(i, 0);
      ASSERT_LT(i, kNumel);
      ++hits[i];
    }
  }
  // Expected kDraws * K / numel = 5000 hits each; sd ~ 61. Allow 6 sd.
  for (int h : hits) EXPECT_NEAR(h, 5000, 370);
  // k == numel takes everything.
  auto all = RandomKCompressor::sample_indices(7, 7, rng);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6}));
}

TEST(RandomK, DeterministicCountsAndValues) {
  const auto layout = test_layout();
  const auto v = distinct_values(5, layout.total_numel, 4);
  RandomKCompressor c(0.2, 1234, false);
  const auto a = c.compress(v, layout, 17);
  const auto b = RandomKCompressor(0.2, 1234, false).compress(v, layout, 17);
  EXPECT_TRUE(torch::equal(a.dense, b.dense));  // same (seed, node, step): same draw
  EXPECT_FALSE(torch::equal(a.dense, c.compress(v, layout, 18).dense));  // another step
  EXPECT_FALSE(
      torch::equal(a.dense, RandomKCompressor(0.2, 99, false).compress(v, layout, 17).dense));
  // Node i's draw does not depend on how many nodes are compressed together.
  const auto first3 = c.compress(v.narrow(0, 0, 3).contiguous(), layout, 17);
  EXPECT_TRUE(torch::equal(first3.dense, a.dense.narrow(0, 0, 3)));
  // Rows differ (independent streams per node).
  EXPECT_FALSE(torch::equal(a.dense[0].ne(0), a.dense[1].ne(0)));
  // Exactly K per segment and row, and kept entries carry the input values.
  EXPECT_EQ(a.sent.kept_per_segment, kept_per_segment(layout, 0.2));
  for (std::size_t s = 0; s < layout.segments.size(); ++s) {
    const auto& seg = layout.segments[s];
    const auto kept = a.dense.narrow(1, seg.offset, seg.numel).ne(0).sum(1);
    EXPECT_TRUE(torch::equal(kept, torch::full({5}, a.sent.kept_per_segment[s], torch::kLong)));
  }
  const auto mask = a.dense.ne(0);
  EXPECT_TRUE(torch::equal(a.dense.masked_select(mask), v.masked_select(mask)));
}

// A segment whose every entry is kept goes whole, without indices (as top-k's does): at keep = 1
// every segment, and at any keep a single scalar. The draws of the other segments are unchanged.
TEST(RandomK, WholeSegmentsCarryNoIndices) {
  const auto layout = test_layout();
  const auto v = distinct_values(3, layout.total_numel, 6);
  for (const bool unbiased : {false, true}) {
    const auto all = RandomKCompressor(1.0, 7, unbiased).compress(v, layout, 2);
    EXPECT_TRUE(torch::equal(all.dense, v));
    for (std::size_t s = 0; s < layout.segments.size(); ++s) {
      EXPECT_FALSE(all.kept_index[s].defined()) << layout.segments[s].name;
    }
  }
  const auto some = RandomKCompressor(0.2, 7, false).compress(v, layout, 2);
  EXPECT_FALSE(some.kept_index[0].defined());  // "bias1": one scalar, kept whole
  EXPECT_TRUE(torch::equal(some.dense.narrow(1, 0, 1), v.narrow(1, 0, 1)));
  for (std::size_t s = 1; s < layout.segments.size(); ++s) {
    EXPECT_TRUE(some.kept_index[s].defined()) << layout.segments[s].name;
  }
}

TEST(RandomK, UnbiasedScaling) {
  LayerLayout layout;
  layout.append("a", {10});
  layout.append("b", {4});
  const auto v = torch::ones({2, 14});
  const auto out = RandomKCompressor(0.5, 3, true).compress(v, layout, 0);
  // K = 5 of 10 (scale 2) and 2 of 4 (scale 2).
  const auto kept = out.dense.masked_select(out.dense.ne(0));
  EXPECT_EQ(kept.numel(), 2 * 7);
  EXPECT_TRUE(torch::allclose(kept, torch::full_like(kept, 2.0f)));
  // Unbiased on average: mean over many steps approaches v.
  LayerLayout one;
  one.append("w", {50});
  RandomKCompressor c(0.1, 5, true);
  auto acc = torch::zeros({1, 50});
  const auto x = torch::linspace(-1, 1, 50).reshape({1, 50});
  for (int step = 0; step < 4000; ++step) acc += c.compress(x, one, step).dense;
  EXPECT_LT((acc / 4000 - x).abs().max().item<float>(), 0.15f);
}

}  // namespace
}  // namespace lpdt::compress
