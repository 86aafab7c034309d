// The simulator's byte count is the encoder's: for every compressor and value format, the size
// comm::payload_bytes computes with tensor operations equals the size of the payload encode()
// writes for that node, and decoding it gives back exactly the values the algorithm used.
#include "lpdt/comm/message_codec.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <map>

#include "lpdt/comm/wire_payload.h"

namespace lpdt::comm {
namespace {

// Segment sizes chosen to exercise every index format: tiny layers (bitmap or 1-byte varints),
// a layer of 40,000 scalars at 1% (gaps above 2^7 and 2^14: 2- and 3-byte varints), a dense
// keep (bitmap), single scalars.
LayerLayout codec_layout() {
  LayerLayout layout;
  layout.append("conv1.weight", {16, 3, 3, 3});
  layout.append("norm.v", {1});
  layout.append("conv2.weight", {100, 400});
  layout.append("fc.weight", {10, 64});
  layout.append("fc.bias", {10});
  return layout;
}

struct Case {
  std::string compressor;
  double keep;
  compress::MessageValues values;
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (auto values : {compress::MessageValues::kFloat32, compress::MessageValues::kBfloat16,
                      compress::MessageValues::kInt8}) {
    cases.push_back({"none", 1.0, values});
    for (double keep : {0.001, 0.01, 0.1, 0.5}) cases.push_back({"topk", keep, values});
    cases.push_back({"randomk", 0.05, values});
  }
  return cases;
}

TEST(MessageCodec, CountedSizeIsTheEncodedSize) {
  const auto layout = codec_layout();
  constexpr std::int64_t kNodes = 3;
  std::map<IndexFormat, int> formats_seen;
  torch::manual_seed(11);
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.compressor + " keep " + std::to_string(c.keep) + " values " +
                 std::string(compress::to_string(c.values)));
    auto compressor = compress::make_compressor(compress::CompressorOptions()
                                                    .name(c.compressor)
                                                    .keep_fraction(c.keep)
                                                    .seed(5)
                                                    .values(c.values));
    const auto v = torch::randn({kNodes, layout.total_numel});
    const compress::Compressed message = compressor->compress(v, layout, /*step=*/7);
    const auto counted = payload_bytes(message, layout);
    ASSERT_EQ(counted.sizes(), torch::IntArrayRef({kNodes}));
    for (std::int64_t node = 0; node < kNodes; ++node) {
      const Message m = node_message(message, layout, node, WireAlgorithm::kChoco, 7,
                                     static_cast<std::uint32_t>(node), 0.5f + node);
      const std::vector<std::uint8_t> bytes = encode(m);
      EXPECT_EQ(counted[node].item<std::int64_t>(), static_cast<std::int64_t>(bytes.size()))
          << "node " << node;
      if (c.compressor == "none") {
        EXPECT_EQ(dense_payload_bytes(c.values, layout), static_cast<std::int64_t>(bytes.size()));
      }
      for (const auto& layer : m.layers) {
        ++formats_seen[layer.dense() ? IndexFormat::kDense
                                     : choose_index_format(layer.numel, layer.indices)];
      }
      // The receiver reconstructs exactly the values the sender's algorithm used.
      Expectations expect;
      expect.algorithm = WireAlgorithm::kChoco;
      expect.round = 7;
      expect.sender = static_cast<std::uint32_t>(node);
      expect.layer_numels = layout_numels(layout);
      const Message decoded = decode(bytes, expect);
      EXPECT_EQ(decoded.push_sum_weight, 0.5f + node);
      auto row = torch::empty({layout.total_numel});
      read_message_values(decoded, layout, row);
      EXPECT_TRUE(torch::equal(row, message.dense[node])) << "node " << node;
    }
  }
  // Every index format occurred, so the equality above covered each branch of the size rule.
  for (auto f : {IndexFormat::kDense, IndexFormat::kDeltaVarint, IndexFormat::kBitmap}) {
    EXPECT_GT(formats_seen[f], 0) << "index format " << static_cast<int>(f) << " never chosen";
  }
}

// The sizes the paper's comparison needs: int8 dense payloads are close to 4x smaller than fp32
// ones, and a top-1% int8 message costs well under the paper's 6 bytes per kept value.
TEST(MessageCodec, Int8PayloadsAreSmall) {
  const auto layout = codec_layout();
  torch::manual_seed(12);
  const auto v = torch::randn({2, layout.total_numel});
  auto bytes_of = [&](const char* name, double keep, compress::MessageValues values) {
    auto c = compress::make_compressor(
        compress::CompressorOptions().name(name).keep_fraction(keep).values(values));
    return payload_bytes(c->compress(v, layout, 0), layout)[0].item<std::int64_t>();
  };
  const double dense_ratio =
      static_cast<double>(bytes_of("none", 1, compress::MessageValues::kFloat32)) /
      static_cast<double>(bytes_of("none", 1, compress::MessageValues::kInt8));
  EXPECT_GT(dense_ratio, 3.9);
  const std::int64_t kept = compress::kept_values(layout, 0.01);
  const double per_value =
      static_cast<double>(bytes_of("topk", 0.01, compress::MessageValues::kInt8)) /
      static_cast<double>(kept);
  EXPECT_LT(per_value, 6.0);
}

TEST(MessageCodec, ReceiverRejectsAMessageOfAnotherModel) {
  const auto layout = codec_layout();
  LayerLayout other;
  other.append("w", {7});
  auto c = compress::make_compressor(compress::CompressorOptions());
  const auto message = c->compress(torch::randn({1, 7}), other, 0);
  const Message m = node_message(message, other, 0, WireAlgorithm::kDpsgd, 0, 0, 1.0f);
  auto row = torch::empty({layout.total_numel});
  EXPECT_THROW(read_message_values(m, layout, row), WireError);
}

}  // namespace
}  // namespace lpdt::comm
