// Message value rounding (bf16, int8) composed with every sparsifier: against a scalar reference
// of the gemmlowp quantizer, unbiasedness of stochastic rounding, per-node ranges, and the
// invariants the wire format relies on (dropped positions exactly 0, codes that dequantize to the
// values the algorithm sees).
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <cstring>

#include "lpdt/compress/compressor.h"
#include "lpdt/core/error.h"

namespace lpdt::compress {
namespace {

LayerLayout message_layout() {
  LayerLayout layout;
  layout.append("bias", {3});
  layout.append("conv", {8, 3, 3, 3});
  layout.append("scale", {1});
  layout.append("fc", {10, 64});
  return layout;
}

std::unique_ptr<Compressor> make(const std::string& name, double keep, MessageValues values,
                                 quant::Rounding rounding = quant::Rounding::kStochastic,
                                 std::int64_t first_node = 0) {
  return make_compressor(CompressorOptions()
                             .name(name)
                             .keep_fraction(keep)
                             .seed(17)
                             .values(values)
                             .rounding(rounding)
                             .first_node(first_node));
}

// The kept mask of a compressed message: [n, P] bool from kept_index (or whole segments).
torch::Tensor kept_mask(const Compressed& c, const LayerLayout& layout) {
  auto mask = torch::zeros(c.dense.sizes(), torch::kBool);
  for (std::size_t s = 0; s < layout.segments.size(); ++s) {
    auto seg = mask.narrow(1, layout.segments[s].offset, layout.segments[s].numel);
    if (c.kept_index[s].defined()) {
      seg.scatter_(1, c.kept_index[s], true);
    } else {
      seg.fill_(true);
    }
  }
  return mask;
}

// The gemmlowp quantizer with round-to-nearest-even, one value at a time (paper section 3):
// lo = min(min, 0), hi = max(max, 0), scale = max((hi - lo) / 255, 1e-8), zp = round(-lo / scale),
// q = round(clamp(x / scale + zp, 0, 255)), real = (q - zp) scale.
std::vector<float> reference_int8(const std::vector<float>& x) {
  float lo = 0, hi = 0;
  for (float v : x) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const float scale = std::max((hi - lo) / 255.0f, 1e-8f);
  const float zp = std::nearbyint(-lo / scale);
  std::vector<float> out;
  for (float v : x) {
    const float q = std::nearbyint(std::clamp(v / scale + zp, 0.0f, 255.0f));
    out.push_back((q - zp) * scale);
  }
  return out;
}

TEST(MessageValues, ParseAndName) {
  EXPECT_EQ(parse_message_values("fp32"), MessageValues::kFloat32);
  EXPECT_EQ(parse_message_values("bf16"), MessageValues::kBfloat16);
  EXPECT_EQ(parse_message_values("int8"), MessageValues::kInt8);
  EXPECT_EQ(to_string(MessageValues::kInt8), "int8");
  EXPECT_THROW(parse_message_values("int4"), ConfigError);
}

// bf16: every kept value is the float32's round-to-nearest-even bfloat16, dropped ones stay 0,
// and the sparsifier's choice is unchanged.
TEST(MessageValueRounding, Bfloat16RoundsKeptValuesOnly) {
  const auto layout = message_layout();
  torch::manual_seed(1);
  const auto v = torch::randn({4, layout.total_numel});
  for (const char* name : {"none", "topk", "randomk"}) {
    SCOPED_TRACE(name);
    const double keep = std::string(name) == "none" ? 1.0 : 0.2;
    const Compressed plain = make(name, keep, MessageValues::kFloat32)->compress(v, layout, 3);
    const Compressed rounded = make(name, keep, MessageValues::kBfloat16)->compress(v, layout, 3);
    EXPECT_EQ(rounded.values, MessageValues::kBfloat16);
    const auto mask = kept_mask(rounded, layout);
    EXPECT_TRUE(torch::equal(mask, kept_mask(plain, layout)));
    const auto expected = plain.dense.to(torch::kBFloat16).to(torch::kFloat);
    EXPECT_TRUE(torch::equal(rounded.dense, expected));
    EXPECT_TRUE(torch::equal(rounded.dense.masked_select(mask.logical_not()),
                             torch::zeros({(~mask).sum().item<std::int64_t>()})));
    // Exactly representable in 16 bits: the low half of every float32 is 0.
    const auto bits = rounded.dense.contiguous().view(torch::kInt32);
    EXPECT_EQ(bits.bitwise_and(0xFFFF).count_nonzero().item<std::int64_t>(), 0);
  }
}

// int8, round to nearest: per node and segment, the scalar reference over the kept values.
TEST(MessageValueRounding, Int8NearestMatchesScalarReference) {
  const auto layout = message_layout();
  torch::manual_seed(2);
  // Rows of very different magnitudes: one node's range must not leak into another's.
  const auto v = torch::randn({3, layout.total_numel}) *
                 torch::tensor({1.0f, 100.0f, 0.01f}).unsqueeze(1);
  for (const char* name : {"none", "topk", "randomk"}) {
    SCOPED_TRACE(name);
    const double keep = std::string(name) == "none" ? 1.0 : 0.25;
    const Compressed c =
        make(name, keep, MessageValues::kInt8, quant::Rounding::kNearest)->compress(v, layout, 0);
    const Compressed plain = make(name, keep, MessageValues::kFloat32)->compress(v, layout, 0);
    ASSERT_EQ(c.codes.size(), layout.segments.size());
    const auto mask = kept_mask(c, layout);
    for (std::int64_t node = 0; node < 3; ++node) {
      for (std::size_t s = 0; s < layout.segments.size(); ++s) {
        const auto& seg = layout.segments[s];
        const auto m = mask[node].narrow(0, seg.offset, seg.numel);
        const auto x = plain.dense[node].narrow(0, seg.offset, seg.numel).masked_select(m);
        const auto got = c.dense[node].narrow(0, seg.offset, seg.numel).masked_select(m);
        const std::vector<float> xs(x.data_ptr<float>(), x.data_ptr<float>() + x.numel());
        const auto expected = reference_int8(xs);
        for (std::size_t e = 0; e < xs.size(); ++e) {
          ASSERT_NEAR(got[e].item<float>(), expected[e], 1e-6f * std::abs(expected[e]) + 1e-30f)
              << "node " << node << " segment " << s << " entry " << e;
        }
        // The codes and the node's scale / zero point give exactly the values the algorithm sees.
        const auto& q = c.codes[s];
        const auto dequantized =
            (q.codes[node].to(torch::kFloat) - q.zero_point[node]) * q.scale[node];
        EXPECT_TRUE(torch::equal(dequantized, got));
        EXPECT_EQ(q.zero_point[node].item<float>(), std::nearbyint(q.zero_point[node].item<float>()));
      }
    }
    EXPECT_EQ(c.dense.masked_select(mask.logical_not()).count_nonzero().item<std::int64_t>(), 0);
  }
}

// Stochastic rounding is unbiased: averaged over many rounds (each round its own draws), the
// rounded value approaches the value; a single rounding is off by less than one step.
TEST(MessageValueRounding, Int8StochasticIsUnbiased) {
  LayerLayout layout;
  layout.append("w", {256});
  torch::manual_seed(3);
  const auto v = torch::rand({2, 256}) * 2 - 1;  // range [-1, 1]: step ~ 2 / 255
  auto compressor = make("none", 1.0, MessageValues::kInt8);
  auto sum = torch::zeros_like(v, torch::kDouble);
  constexpr int kRounds = 2000;
  const double step = 2.0 / 255.0;
  for (int r = 0; r < kRounds; ++r) {
    const Compressed c = compressor->compress(v, layout, r);
    EXPECT_LE((c.dense - v).abs().max().item<double>(), step * 1.0001);
    sum += c.dense.to(torch::kDouble);
  }
  // The gemmlowp grid is shifted by the integer zero point, so a node's extreme values can lie
  // up to half a step outside [code 0, code 255] and are clamped (biased): test the others.
  const auto lo = std::get<0>(v.min(1, true)), hi = std::get<0>(v.max(1, true));
  const auto inside = (v > lo + step) & (v < hi - step);
  ASSERT_GT(inside.sum().item<std::int64_t>(), 400);
  const auto bias = (sum / kRounds - v.to(torch::kDouble)).abs().masked_select(inside);
  // Standard error of a mean of 2000 draws with spread <= step / 2: ~0.011 step; 5 sigma.
  EXPECT_LT(bias.max().item<double>(), 0.06 * step);
  // Round to nearest is biased on the same values (the test can tell the difference).
  auto nearest = make("none", 1.0, MessageValues::kInt8, quant::Rounding::kNearest);
  const auto nearest_bias = (nearest->compress(v, layout, 0).dense - v).abs().mean();
  EXPECT_GT(nearest_bias.item<double>(), 0.1 * step);
}

// A node's draws do not depend on which rows share the tensor: rows 2..3 of a 4-node compression
// equal a 2-node compression of those rows hosted with first_node = 2 (an MPI rank's view).
TEST(MessageValueRounding, Int8DrawsFollowGlobalNodeIds) {
  const auto layout = message_layout();
  torch::manual_seed(4);
  const auto v = torch::randn({4, layout.total_numel});
  const Compressed all = make("topk", 0.3, MessageValues::kInt8)->compress(v, layout, 9);
  const Compressed part =
      make("topk", 0.3, MessageValues::kInt8, quant::Rounding::kStochastic, /*first_node=*/2)
          ->compress(v.narrow(0, 2, 2).contiguous(), layout, 9);
  EXPECT_TRUE(torch::equal(part.dense, all.dense.narrow(0, 2, 2)));
  // And the draws change with the round.
  const Compressed next = make("topk", 0.3, MessageValues::kInt8)->compress(v, layout, 10);
  EXPECT_FALSE(torch::equal(next.dense, all.dense));
}

// The identity returns its input; rounding must not write into it.
TEST(MessageValueRounding, NeverWritesIntoTheInput) {
  const auto layout = message_layout();
  torch::manual_seed(5);
  const auto v = torch::randn({2, layout.total_numel});
  const auto copy = v.clone();
  for (auto values : {MessageValues::kBfloat16, MessageValues::kInt8}) {
    const Compressed c = make("none", 1.0, values)->compress(v, layout, 0);
    EXPECT_TRUE(torch::equal(v, copy));
    EXPECT_FALSE(torch::equal(c.dense, v));
  }
}

}  // namespace
}  // namespace lpdt::compress
