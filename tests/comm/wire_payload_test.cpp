// The wire payload codec (docs/wire.md): the byte layout against hand-written bytes, round trips
// of every value format x index format, the size formulas, the index format choice, and every
// check of the decoder, each triggered by editing a valid payload and re-sealing its checksum.
#include "lpdt/comm/wire_payload.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace lpdt::comm {
namespace {

using Bytes = std::vector<std::uint8_t>;
constexpr std::uint32_t kU32Max = std::numeric_limits<std::uint32_t>::max();

// Header offsets, spelled out from the layout in wire_payload.h.
constexpr std::size_t kAlgorithmAt = 6;
constexpr std::size_t kFlagsAt = 7;
constexpr std::size_t kLayerCountAt = 20;
constexpr std::size_t kTotalSizeAt = 28;
constexpr std::size_t kChecksumAt = 32;
// The first layer record starts right after the header.
constexpr std::size_t kRecord = 36;
constexpr std::size_t kNumelAt = kRecord + 2;
constexpr std::size_t kCountAt = kRecord + 6;
constexpr std::size_t kAfterCount = kRecord + 10;

// ---- helpers ---------------------------------------------------------------------------------

// The message of the WireError `action` throws; "(no error)" when it throws none. Any other
// exception escapes and fails the test.
std::string wire_error(const std::function<void()>& action) {
  try {
    action();
  } catch (const WireError& error) {
    return error.what();
  }
  return "(no error)";
}

std::string decode_error(const Bytes& bytes, const Expectations& expect = {}) {
  return wire_error([&] { decode(bytes, expect); });
}

void put_u8(Bytes& out, std::uint8_t v) { out.push_back(v); }
void put_u32(Bytes& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void put_f32(Bytes& out, float v) { put_u32(out, std::bit_cast<std::uint32_t>(v)); }
void set_u32(Bytes& bytes, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint32_t get_u32(const Bytes& bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(bytes[at + i]) << (8 * i);
  return v;
}

// After an edit that changes the length: the size field follows, then the checksum.
void fix_size_and_reseal(Bytes& bytes) {
  set_u32(bytes, kTotalSizeAt, static_cast<std::uint32_t>(bytes.size()));
  reseal(bytes);
}

// A header for `layer_count` layers (from an encoded empty message) followed by hand-made layer
// records, sized and sealed: for record encodings the encoder never writes.
Bytes payload_with_records(std::uint32_t layer_count, const Bytes& records) {
  Message empty;
  empty.round = 12;
  empty.sender = 3;
  Bytes bytes = encode(empty);
  set_u32(bytes, kLayerCountAt, layer_count);
  bytes.insert(bytes.end(), records.begin(), records.end());
  fix_size_and_reseal(bytes);
  return bytes;
}

// The fixed part of a hand-made layer record.
Bytes record_head(ValueFormat vf, IndexFormat xf, std::uint32_t numel, std::uint32_t count) {
  Bytes out;
  put_u8(out, static_cast<std::uint8_t>(vf));
  put_u8(out, static_cast<std::uint8_t>(xf));
  put_u32(out, numel);
  put_u32(out, count);
  return out;
}

void fill_values(LayerMessage& layer, std::mt19937& rng) {
  const std::size_t count = layer.count();
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255);
  layer.f32.clear();
  layer.bf16.clear();
  layer.codes.clear();
  for (std::size_t e = 0; e < count; ++e) {
    switch (layer.format) {
      case ValueFormat::kFloat32:
        layer.f32.push_back(normal(rng));
        break;
      case ValueFormat::kBfloat16:
        layer.bf16.push_back(
            static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(normal(rng)) >> 16));
        break;
      case ValueFormat::kInt8:
        layer.codes.push_back(static_cast<std::uint8_t>(byte(rng)));
        break;
    }
  }
  if (layer.format == ValueFormat::kInt8) {
    layer.scale = std::uniform_real_distribution<float>(1e-4f, 1.0f)(rng);
    layer.zero_point = static_cast<std::uint8_t>(byte(rng));
  }
}

// `count` distinct sorted positions in [0, numel).
std::vector<std::uint32_t> sample_positions(std::uint32_t numel, std::size_t count,
                                            std::mt19937& rng) {
  std::set<std::uint32_t> chosen;
  std::uniform_int_distribution<std::uint32_t> position(0, numel - 1);
  while (chosen.size() < count) chosen.insert(position(rng));
  return {chosen.begin(), chosen.end()};
}

// Index patterns that make the encoder pick each index format.
std::vector<std::uint32_t> pattern_indices(IndexFormat target, std::uint32_t& numel,
                                           std::mt19937& rng) {
  switch (target) {
    case IndexFormat::kDense:
      numel = std::uniform_int_distribution<std::uint32_t>(1, 600)(rng);
      return {};
    case IndexFormat::kIndexU32: {
      // Gaps of at least 2^28 take 5 varint bytes, more than 4; the bitmap is 512 MiB.
      numel = kU32Max;
      const std::size_t count = std::uniform_int_distribution<std::size_t>(1, 14)(rng);
      std::vector<std::uint32_t> indices;
      std::uint64_t position = 0;
      for (std::size_t e = 0; e < count; ++e) {
        position +=
            (std::uint64_t{1} << 28) + std::uniform_int_distribution<std::uint32_t>(0, 9999)(rng);
        indices.push_back(static_cast<std::uint32_t>(position));
      }
      return indices;
    }
    case IndexFormat::kDeltaVarint: {
      // About 1% density: gaps of ~100 take 1-2 bytes, far less than a bitmap or u32.
      numel = std::uniform_int_distribution<std::uint32_t>(20000, 100000)(rng);
      return sample_positions(numel, numel / 100, rng);
    }
    case IndexFormat::kBitmap: {
      // Dense runs: at least a third of the positions.
      numel = std::uniform_int_distribution<std::uint32_t>(30, 3000)(rng);
      const std::size_t count = std::uniform_int_distribution<std::size_t>(numel / 3, numel)(rng);
      return sample_positions(numel, count, rng);
    }
  }
  return {};
}

LayerMessage pattern_layer(ValueFormat format, IndexFormat target, std::mt19937& rng) {
  LayerMessage layer;
  layer.format = format;
  layer.indices = pattern_indices(target, layer.numel, rng);
  fill_values(layer, rng);
  return layer;
}

std::uint32_t bits(float v) { return std::bit_cast<std::uint32_t>(v); }

// Field by field, floats by their bits (so NaN payloads compare too).
void expect_same(const Message& a, const Message& b) {
  EXPECT_EQ(a.algorithm, b.algorithm);
  EXPECT_EQ(a.round, b.round);
  EXPECT_EQ(a.sender, b.sender);
  EXPECT_EQ(bits(a.push_sum_weight), bits(b.push_sum_weight));
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (std::size_t i = 0; i < a.layers.size(); ++i) {
    SCOPED_TRACE("layer " + std::to_string(i));
    const auto& x = a.layers[i];
    const auto& y = b.layers[i];
    EXPECT_EQ(x.format, y.format);
    EXPECT_EQ(x.numel, y.numel);
    EXPECT_EQ(x.indices, y.indices);
    ASSERT_EQ(x.f32.size(), y.f32.size());
    for (std::size_t e = 0; e < x.f32.size(); ++e) EXPECT_EQ(bits(x.f32[e]), bits(y.f32[e]));
    EXPECT_EQ(x.bf16, y.bf16);
    EXPECT_EQ(x.codes, y.codes);
    if (x.format == ValueFormat::kInt8) {
      EXPECT_EQ(bits(x.scale), bits(y.scale));
      EXPECT_EQ(x.zero_point, y.zero_point);
    }
  }
}

// LEB128 written out, to count its bytes independently of varint_bytes().
Bytes leb128(std::uint32_t v) {
  Bytes out;
  do {
    std::uint8_t byte = v & 0x7F;
    v >>= 7;
    if (v != 0) byte |= 0x80;
    out.push_back(byte);
  } while (v != 0);
  return out;
}

// ---- layout ----------------------------------------------------------------------------------

// One message with a layer of every index format, against bytes written out by hand.
Message golden_message() {
  Message m;
  m.algorithm = WireAlgorithm::kDeepSqueeze;
  m.round = 0x0102030405060708ull;
  m.sender = 0x0A0B0C0D;
  m.push_sum_weight = 0.5f;
  LayerMessage dense;  // f32, dense
  dense.numel = 2;
  dense.f32 = {1.0f, -2.0f};
  LayerMessage bitmap;  // bf16; u32 12 B, varint 3 B, bitmap 2 B
  bitmap.format = ValueFormat::kBfloat16;
  bitmap.numel = 10;
  bitmap.indices = {0, 3, 9};
  bitmap.bf16 = {0x3F80, 0xBF80, 0x4000};
  LayerMessage varint;  // int8; u32 8 B, varint 1 + 2 B, bitmap 12500 B
  varint.format = ValueFormat::kInt8;
  varint.numel = 100000;
  varint.indices = {5, 133};
  varint.codes = {130, 0};
  varint.scale = 0.25f;
  varint.zero_point = 128;
  LayerMessage u32;  // f32; u32 8 B, varint 5 + 5 B
  u32.numel = kU32Max;
  u32.indices = {1u << 28, 1u << 29};
  u32.f32 = {3.0f, 0.0f};
  m.layers = {dense, bitmap, varint, u32};
  return m;
}

TEST(WirePayload, EncodesTheDocumentedLayoutByteForByte) {
  const Bytes expected_without_crc = {
      'L',  'P',  'D',  'W',  0x01, 0x00, 0x01, 0x00,              // magic, version, algo, flags
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,              // round
      0x0D, 0x0C, 0x0B, 0x0A, 0x04, 0x00, 0x00, 0x00,              // sender, layer count
      0x00, 0x00, 0x00, 0x3F, 118,  0x00, 0x00, 0x00,              // weight 0.5, total size
      0x00, 0x00, 0x00, 0x00,                                      // CRC (filled below)
      0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,  // f32 dense, numel 2, K 2
      0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0xC0,              // 1.0, -2.0
      0x01, 0x03, 0x0A, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,  // bf16 bitmap, 10, K 3
      0x09, 0x02,                                                  // bits 0, 3 | 9
      0x80, 0x3F, 0x80, 0xBF, 0x00, 0x40,                          // 1.0, -1.0, 2.0
      0x02, 0x02, 0xA0, 0x86, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00,  // int8 varint, 100000, K 2
      0x00, 0x00, 0x80, 0x3E, 128,                                 // scale 0.25, zero point
      0x05, 0x80, 0x01,                                            // 5, gap 128
      130,  0,                                                     // codes
      0x00, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0x02, 0x00, 0x00, 0x00,  // f32 u32, 2^32-1, K 2
      0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x20,              // 2^28, 2^29
      0x00, 0x00, 0x40, 0x40, 0x00, 0x00, 0x00, 0x00,              // 3.0, 0.0
  };
  ASSERT_EQ(expected_without_crc.size(), 118u);
  Bytes expected = expected_without_crc;
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, expected.data(), 32);
  crc = crc32(crc, expected.data() + 36, static_cast<uInt>(expected.size() - 36));
  set_u32(expected, kChecksumAt, static_cast<std::uint32_t>(crc));

  const Message m = golden_message();
  EXPECT_EQ(message_bytes(m), 118u);
  const Bytes encoded = encode(m);
  EXPECT_EQ(encoded, expected);
  EXPECT_EQ(payload_checksum(encoded), static_cast<std::uint32_t>(crc));
  expect_same(decode(encoded), m);
}

TEST(WirePayload, ValueWidensBf16AndDequantizesInt8) {
  LayerMessage bf16;
  bf16.format = ValueFormat::kBfloat16;
  bf16.numel = 2;
  bf16.bf16 = {0x3FC0, 0xC120};  // 1.5, -10.0
  EXPECT_EQ(bf16.value(0), 1.5f);
  EXPECT_EQ(bf16.value(1), -10.0f);
  LayerMessage int8;
  int8.format = ValueFormat::kInt8;
  int8.numel = 3;
  int8.codes = {14, 0, 10};
  int8.scale = 0.5f;
  int8.zero_point = 10;
  EXPECT_EQ(int8.value(0), 2.0f);
  EXPECT_EQ(int8.value(1), -5.0f);
  EXPECT_EQ(int8.value(2), 0.0f);
}

// ---- round trips -----------------------------------------------------------------------------

TEST(WirePayload, RoundTripsEveryValueFormatAndIndexFormat) {
  std::mt19937 rng(20240611);
  for (const auto vf : {ValueFormat::kFloat32, ValueFormat::kBfloat16, ValueFormat::kInt8}) {
    for (const auto xf : {IndexFormat::kDense, IndexFormat::kIndexU32, IndexFormat::kDeltaVarint,
                          IndexFormat::kBitmap}) {
      for (int trial = 0; trial < 5; ++trial) {
        SCOPED_TRACE("value format " + std::to_string(static_cast<int>(vf)) + ", index format " +
                     std::to_string(static_cast<int>(xf)) + ", trial " + std::to_string(trial));
        Message m;
        m.algorithm = static_cast<WireAlgorithm>(trial % 3);
        m.round = rng();
        m.sender = rng();
        m.push_sum_weight = std::uniform_real_distribution<float>(0.0f, 1.0f)(rng);
        m.layers.push_back(pattern_layer(vf, xf, rng));
        const Bytes bytes = encode(m);
        ASSERT_EQ(bytes.size(), message_bytes(m));
        EXPECT_EQ(bytes[kRecord], static_cast<std::uint8_t>(vf));
        EXPECT_EQ(bytes[kRecord + 1], static_cast<std::uint8_t>(xf))
            << "the pattern did not force it";
        expect_same(decode(bytes), m);
      }
    }
  }
}

TEST(WirePayload, RoundTripsMixedMultiLayerMessages) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    Message m;
    m.round = trial;
    const int layers = std::uniform_int_distribution<int>(0, 5)(rng);
    for (int i = 0; i < layers; ++i) {
      m.layers.push_back(pattern_layer(static_cast<ValueFormat>(rng() % 3),
                                       static_cast<IndexFormat>(rng() % 4), rng));
    }
    const Bytes bytes = encode(m);
    const Message back = decode(bytes);
    expect_same(back, m);
    EXPECT_EQ(encode(back), bytes);
  }
}

TEST(WirePayload, CarriesNonFiniteValuesBitExactly) {
  Message m;
  LayerMessage layer;
  layer.numel = 4;
  layer.f32 = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
               -0.0f, std::bit_cast<float>(0x7FC01234u)};
  m.layers = {layer};
  m.push_sum_weight = -0.0f;
  expect_same(decode(encode(m)), m);
}

// ---- sizes -----------------------------------------------------------------------------------

TEST(WirePayload, MessageBytesIsTheEncodedSizeForRandomShapes) {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 300; ++trial) {
    Message m;
    std::size_t expected = 36;
    const int layers = std::uniform_int_distribution<int>(0, 6)(rng);
    for (int i = 0; i < layers; ++i) {
      LayerMessage layer;
      layer.format = static_cast<ValueFormat>(rng() % 3);
      layer.numel = std::uniform_int_distribution<std::uint32_t>(1, 5000)(rng);
      const double density = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
      const auto count = static_cast<std::size_t>(density * density * layer.numel);
      if (rng() % 4 != 0) layer.indices = sample_positions(layer.numel, count, rng);
      fill_values(layer, rng);
      // The size from the layout, computed here without the library's helpers.
      const std::size_t k = layer.dense() ? layer.numel : layer.indices.size();
      std::size_t varint = 0;
      for (std::size_t e = 0; e < layer.indices.size(); ++e) {
        varint +=
            leb128(e == 0 ? layer.indices[0] : layer.indices[e] - layer.indices[e - 1]).size();
      }
      const std::size_t index =
          layer.dense()
              ? 0
              : std::min<std::size_t>({4 * k, varint, (std::size_t{layer.numel} + 7) / 8});
      const std::size_t width = layer.format == ValueFormat::kFloat32    ? 4
                                : layer.format == ValueFormat::kBfloat16 ? 2
                                                                         : 1;
      const std::size_t record =
          10 + (layer.format == ValueFormat::kInt8 ? 5 : 0) + index + k * width;
      EXPECT_EQ(layer_bytes(layer), record);
      expected += record;
      m.layers.push_back(std::move(layer));
    }
    EXPECT_EQ(message_bytes(m), expected);
    EXPECT_EQ(encode(m).size(), expected);
  }
}

TEST(WirePayload, VarintBytesAtEveryLengthBoundary) {
  const std::pair<std::uint32_t, std::size_t> cases[] = {{0, 1},        {127, 1},
                                                         {128, 2},      {16383, 2},
                                                         {16384, 3},    {(1u << 21) - 1, 3},
                                                         {1u << 21, 4}, {(1u << 28) - 1, 4},
                                                         {1u << 28, 5}, {kU32Max, 5}};
  for (const auto& [value, bytes] : cases) {
    EXPECT_EQ(varint_bytes(value), bytes) << value;
    EXPECT_EQ(leb128(value).size(), bytes) << value;
  }
  const std::vector<std::uint32_t> sorted = {0, 127, 255, 16639};  // gaps 0, 127, 128, 16384
  EXPECT_EQ(delta_varint_bytes(sorted), 1u + 1u + 2u + 3u);
  EXPECT_EQ(index_u32_bytes(7), 28u);
  EXPECT_EQ(bitmap_bytes(1), 1u);
  EXPECT_EQ(bitmap_bytes(8), 1u);
  EXPECT_EQ(bitmap_bytes(9), 2u);
}

TEST(WirePayload, ChooseIndexFormatPicksTheSmallestWithTiesInOrder) {
  std::mt19937 rng(5);
  std::set<IndexFormat> seen;
  for (int trial = 0; trial < 2000; ++trial) {
    // Sizes from 1 to 2^32 - 1 and densities from one index to all of them.
    const int magnitude = std::uniform_int_distribution<int>(0, 31)(rng);
    const std::uint32_t numel = std::max<std::uint32_t>(
        1, static_cast<std::uint32_t>(rng() >> (31 - std::min(magnitude, 31))) | 1u);
    const std::size_t max_count = std::min<std::uint64_t>(numel, 400);
    const std::size_t count = std::uniform_int_distribution<std::size_t>(1, max_count)(rng);
    const auto indices = sample_positions(numel, count, rng);
    std::size_t varint = 0;
    for (std::size_t e = 0; e < count; ++e) {
      varint += leb128(e == 0 ? indices[0] : indices[e] - indices[e - 1]).size();
    }
    const std::size_t u32 = 4 * count;
    const std::size_t bitmap = numel / 8 + (numel % 8 != 0);
    const std::size_t best = std::min({u32, varint, bitmap});
    const IndexFormat expected = u32 == best      ? IndexFormat::kIndexU32
                                 : varint == best ? IndexFormat::kDeltaVarint
                                                  : IndexFormat::kBitmap;
    EXPECT_EQ(choose_index_format(numel, indices), expected)
        << "numel " << numel << ", K " << count << ": u32 " << u32 << ", varint " << varint
        << ", bitmap " << bitmap;
    seen.insert(expected);
  }
  EXPECT_EQ(seen.size(), 3u) << "the random cases should reach every sparse format";
  EXPECT_EQ(choose_index_format(100, {}), IndexFormat::kDense);
  // Ties: varint (1 B) and bitmap (1 B) -> varint; u32 (8 B) and varint (4 + 4 B) -> u32.
  const std::vector<std::uint32_t> one = {0};
  EXPECT_EQ(choose_index_format(8, one), IndexFormat::kDeltaVarint);
  const std::vector<std::uint32_t> two_far = {1u << 21, 1u << 22};
  EXPECT_EQ(choose_index_format(1u << 23, two_far), IndexFormat::kIndexU32);
  // Strictly smaller: bitmap (1 B) against varint (2 B).
  const std::vector<std::uint32_t> two_near = {0, 1};
  EXPECT_EQ(choose_index_format(8, two_near), IndexFormat::kBitmap);
}

// ---- validate --------------------------------------------------------------------------------

TEST(WirePayload, ValidateNamesTheLayerAndTheProblem) {
  const auto error_for = [](const LayerMessage& layer) {
    Message m;
    LayerMessage fine;
    fine.numel = 1;
    fine.f32 = {1.0f};
    m.layers = {fine, layer};
    return wire_error([&] { encode(m); });
  };
  LayerMessage layer;
  layer.numel = 4;
  layer.f32 = {1, 2, 3};
  EXPECT_NE(error_for(layer).find("layer 1 (float32, dense) holds 3 float32 values, expected 4"),
            std::string::npos)
      << error_for(layer);

  layer.f32 = {1, 2, 3, 4};
  layer.bf16 = {1};
  EXPECT_NE(error_for(layer).find("holds 1 bfloat16 values, expected 0"), std::string::npos);

  layer = {};
  layer.numel = 10;
  layer.indices = {3, 2};
  layer.f32 = {1, 2};
  EXPECT_NE(error_for(layer).find("index 2 at entry 1 follows index 3"), std::string::npos);
  layer.indices = {3, 3};
  EXPECT_NE(error_for(layer).find("strictly increasing"), std::string::npos);
  layer.indices = {3, 10};
  EXPECT_NE(
      error_for(layer).find("index 10 at entry 1 is out of range; expected positions in [0, 10)"),
      std::string::npos);

  layer = {};
  layer.numel = 2;
  layer.indices = {0, 1, 2};
  layer.f32 = {1, 2, 3};
  EXPECT_NE(error_for(layer).find("3 indices but only 2 scalars"), std::string::npos);

  layer = {};
  EXPECT_NE(error_for(layer).find("layer 1 has numel 0"), std::string::npos);

  layer = {};
  layer.format = ValueFormat::kInt8;
  layer.numel = 1;
  layer.codes = {1};
  for (const float scale : {0.0f, -1.0f, std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()}) {
    layer.scale = scale;
    EXPECT_NE(error_for(layer).find("expected a finite scale > 0"), std::string::npos) << scale;
  }
  layer.scale = 1e-30f;
  EXPECT_EQ(error_for(layer), "(no error)");
}

// ---- decoder checks --------------------------------------------------------------------------

// Single-layer payloads whose record starts at byte 36.
Bytes single_layer(const LayerMessage& layer) {
  Message m;
  m.round = 12;
  m.sender = 3;
  m.layers = {layer};
  return encode(m);
}

LayerMessage dense_f32(std::uint32_t numel) {
  LayerMessage layer;
  layer.numel = numel;
  layer.f32.assign(numel, 0.25f);
  return layer;
}

// u32-format layer: positions 2^28, 2^29, 3 * 2^28 in a layer of 2^30 + 1 scalars.
LayerMessage u32_layer() {
  LayerMessage layer;
  layer.numel = (1u << 30) + 1;
  layer.indices = {1u << 28, 1u << 29, 3u << 28};
  layer.f32 = {1, 2, 3};
  return layer;
}

#define EXPECT_DECODE_ERROR(bytes, phrase)                           \
  do {                                                               \
    const std::string message_ = decode_error(bytes);                \
    EXPECT_NE(message_.find(phrase), std::string::npos) << message_; \
  } while (0)

TEST(WireDecode, AcceptsTheUnmodifiedPayloads) {
  EXPECT_EQ(decode_error(encode(golden_message())), "(no error)");
  EXPECT_EQ(decode_error(single_layer(u32_layer())), "(no error)");
  EXPECT_EQ(decode_error(payload_with_records(0, {})), "(no error)");
}

TEST(WireDecode, RejectsAShortPayload) {
  const Bytes bytes = encode(golden_message());
  EXPECT_DECODE_ERROR(Bytes(bytes.begin(), bytes.begin() + 35),
                      "wire payload of 35 bytes is shorter than its 36-byte header");
  EXPECT_DECODE_ERROR(Bytes{}, "wire payload of 0 bytes");
}

TEST(WireDecode, RejectsABadMagic) {
  Bytes bytes = encode(golden_message());
  bytes[3] = 'X';
  reseal(bytes);
  EXPECT_DECODE_ERROR(bytes, "starts with bytes 4c 50 44 58, expected the magic \"LPDW\"");
}

TEST(WireDecode, RejectsAnotherVersion) {
  Bytes bytes = encode(golden_message());
  bytes[4] = 2;
  reseal(bytes);
  EXPECT_DECODE_ERROR(bytes, "format version 2; this build reads version 1 only");
}

TEST(WireDecode, RejectsASizeMismatch) {
  Bytes bytes = encode(golden_message());
  bytes.push_back(0);
  EXPECT_DECODE_ERROR(bytes, "total size of 118 bytes, but 119 bytes were received");
  bytes.resize(100);
  EXPECT_DECODE_ERROR(bytes, "total size of 118 bytes, but 100 bytes were received");
}

TEST(WireDecode, RejectsABadChecksum) {
  Bytes bytes = encode(golden_message());
  bytes[60] ^= 0x10;
  EXPECT_DECODE_ERROR(bytes, "checksum mismatch");
  bytes[60] ^= 0x10;
  bytes[kChecksumAt] ^= 1;
  EXPECT_DECODE_ERROR(bytes, "checksum mismatch");
}

TEST(WireDecode, RejectsNonzeroFlags) {
  Bytes bytes = encode(golden_message());
  bytes[kFlagsAt] = 1;
  reseal(bytes);
  EXPECT_DECODE_ERROR(bytes, "flags byte is 1, expected 0");
}

TEST(WireDecode, RejectsAnUnknownAlgorithm) {
  Bytes bytes = encode(golden_message());
  bytes[kAlgorithmAt] = 3;
  reseal(bytes);
  EXPECT_DECODE_ERROR(bytes, "algorithm code 3, expected 0 (dpsgd), 1 (deepsqueeze) or 2 (choco)");
}

TEST(WireDecode, RejectsATruncatedLayer) {
  Bytes bytes = encode(golden_message());
  bytes.pop_back();
  fix_size_and_reseal(bytes);
  EXPECT_DECODE_ERROR(bytes,
                      "payload truncated in layer 3 at byte offset 110: needs 8 more bytes, "
                      "but only 7 remain");
}

TEST(WireDecode, RejectsUnknownFormats) {
  Bytes bytes = single_layer(dense_f32(4));
  bytes[kRecord] = 3;
  reseal(bytes);
  EXPECT_DECODE_ERROR(bytes, "layer 0 (record at byte offset 36) has value format 3");
  bytes[kRecord] = 0;
  bytes[kRecord + 1] = 4;
  reseal(bytes);
  EXPECT_DECODE_ERROR(bytes, "has index format 4");
}

TEST(WireDecode, RejectsBadCounts) {
  Bytes sparse = single_layer(u32_layer());
  set_u32(sparse, kCountAt, (1u << 30) + 2);
  reseal(sparse);
  EXPECT_DECODE_ERROR(
      sparse, "carries a count of 1073741826 values; expected 1 <= count <= numel 1073741825");
  set_u32(sparse, kCountAt, 0);
  reseal(sparse);
  EXPECT_DECODE_ERROR(sparse, "carries a count of 0 values");

  Bytes dense = single_layer(dense_f32(4));
  set_u32(dense, kCountAt, 3);
  reseal(dense);
  EXPECT_DECODE_ERROR(dense, "is dense but carries 3 values; expected numel 4");
  set_u32(dense, kNumelAt, 0);
  reseal(dense);
  EXPECT_DECODE_ERROR(dense, "has numel 0");
}

TEST(WireDecode, RejectsUnsortedDuplicateAndOutOfRangeU32Indices) {
  const Bytes valid = single_layer(u32_layer());
  ASSERT_EQ(valid[kRecord + 1], static_cast<std::uint8_t>(IndexFormat::kIndexU32));
  Bytes bytes = valid;
  set_u32(bytes, kAfterCount, 1u << 29);
  set_u32(bytes, kAfterCount + 4, 1u << 28);
  reseal(bytes);
  EXPECT_DECODE_ERROR(
      bytes, "layer 0, index 1 is 268435456 after 536870912; expected strictly increasing");
  bytes = valid;
  set_u32(bytes, kAfterCount + 4, 1u << 28);
  reseal(bytes);
  EXPECT_DECODE_ERROR(bytes, "index 1 is 268435456 after 268435456");
  bytes = valid;
  set_u32(bytes, kAfterCount + 8, (1u << 30) + 1);
  reseal(bytes);
  EXPECT_DECODE_ERROR(bytes, "index 2 is 1073741825, out of range; expected [0, 1073741825)");
}

TEST(WireDecode, RejectsBadVarintIndices) {
  const auto varint_payload = [](std::uint32_t numel, std::uint32_t count, const Bytes& varints) {
    Bytes record = record_head(ValueFormat::kInt8, IndexFormat::kDeltaVarint, numel, count);
    put_f32(record, 1.0f);
    put_u8(record, 0);
    record.insert(record.end(), varints.begin(), varints.end());
    for (std::uint32_t e = 0; e < count; ++e) put_u8(record, 7);
    return payload_with_records(1, record);
  };
  // The hand-made record itself is valid: 5, gap 128.
  const Bytes valid = varint_payload(100000, 2, {0x05, 0x80, 0x01});
  ASSERT_EQ(decode_error(valid), "(no error)");
  EXPECT_EQ(decode(valid).layers[0].indices, (std::vector<std::uint32_t>{5, 133}));

  EXPECT_DECODE_ERROR(varint_payload(1000, 3, {0x05, 0x00, 0x01}),
                      "layer 0, index 1 has gap 0 after index 5; expected strictly increasing");
  EXPECT_DECODE_ERROR(varint_payload(1000, 2, {0x05, 0xE8, 0x07}),
                      "layer 0, index 1 is 1005, out of range; expected [0, 1000)");
  EXPECT_DECODE_ERROR(varint_payload(1000, 1, {0xE8, 0x07}),
                      "layer 0, index 0 is 1000, out of range");
  EXPECT_DECODE_ERROR(varint_payload(kU32Max, 2, {0xF0, 0xFF, 0xFF, 0xFF, 0x0F, 0x20}),
                      "index 1 overflows 32 bits (4294967280 + gap 32)");
  EXPECT_DECODE_ERROR(varint_payload(kU32Max, 1, {0x80, 0x80, 0x80, 0x80, 0x80, 0x01}),
                      "varint 0 at byte offset 51 is longer than 5 bytes");
  EXPECT_DECODE_ERROR(varint_payload(kU32Max, 1, {0xFF, 0xFF, 0xFF, 0xFF, 0x1F}),
                      "has value 8589934591, which does not fit in 32 bits");
  EXPECT_DECODE_ERROR(varint_payload(1000, 2, {0x05, 0x83, 0x00}),
                      "varint 1 at byte offset 52 is not in its shortest form");
}

TEST(WireDecode, RejectsBadBitmaps) {
  // The golden message's layer 1: bf16, numel 10, bitmap 09 02 (positions 0, 3, 9) at byte 64.
  const Bytes valid = encode(golden_message());
  const std::size_t bitmap_at = 36 + 18 + 10;
  ASSERT_EQ(valid[bitmap_at], 0x09);
  ASSERT_EQ(valid[bitmap_at + 1], 0x02);
  Bytes bytes = valid;
  bytes[bitmap_at + 1] = 0x04;  // position 10 instead of 9: still 3 bits
  reseal(bytes);
  EXPECT_DECODE_ERROR(bytes, "layer 1, bitmap at byte offset 64 has bits set past numel 10");
  bytes[bitmap_at + 1] = 0x00;  // 2 bits
  reseal(bytes);
  EXPECT_DECODE_ERROR(bytes, "has 2 bits set, expected the count 3");
  bytes[bitmap_at + 1] = 0x03;  // 4 bits
  reseal(bytes);
  EXPECT_DECODE_ERROR(bytes, "has 4 bits set, expected the count 3");
}

TEST(WireDecode, RejectsANonCanonicalIndexFormat) {
  // Positions 5 and 133 of 100000 sent as u32 (8 B) where delta varint takes 3 B.
  Bytes record = record_head(ValueFormat::kFloat32, IndexFormat::kIndexU32, 100000, 2);
  put_u32(record, 5);
  put_u32(record, 133);
  put_f32(record, 1.0f);
  put_f32(record, 2.0f);
  EXPECT_DECODE_ERROR(payload_with_records(1, record),
                      "uses index format u32 indices (8 bytes) but delta varint (3 bytes) is "
                      "smaller; payloads are canonical");
  // Position 0 of 8 as a bitmap (1 B) ties with delta varint (1 B), which comes first.
  record = record_head(ValueFormat::kFloat32, IndexFormat::kBitmap, 8, 1);
  put_u8(record, 0x01);
  put_f32(record, 1.0f);
  EXPECT_DECODE_ERROR(payload_with_records(1, record), "is as small and comes first");
}

TEST(WireDecode, RejectsABadInt8Scale) {
  LayerMessage layer;
  layer.format = ValueFormat::kInt8;
  layer.numel = 3;
  layer.codes = {1, 2, 3};
  layer.scale = 0.5f;
  const Bytes valid = single_layer(layer);
  const std::pair<float, std::string> cases[] = {{0.0f, "0"},
                                                 {-0.5f, "-0.5"},
                                                 {std::numeric_limits<float>::infinity(), "inf"},
                                                 {std::numeric_limits<float>::quiet_NaN(), "nan"}};
  for (const auto& [scale, text] : cases) {
    Bytes bytes = valid;
    set_u32(bytes, kAfterCount, bits(scale));
    reseal(bytes);
    EXPECT_DECODE_ERROR(bytes, "has int8 scale " + text + "; expected a finite scale > 0");
  }
}

TEST(WireDecode, RejectsTrailingBytes) {
  Bytes bytes = encode(golden_message());
  bytes.push_back(0);
  bytes.push_back(0);
  fix_size_and_reseal(bytes);
  EXPECT_DECODE_ERROR(bytes, "2 trailing bytes at byte offset 118 after the last of 4 layers");
}

TEST(WireDecode, RejectsALayerCountTheBytesCannotHold) {
  Bytes bytes = encode(golden_message());
  for (const std::uint32_t count : {kU32Max, 0x7FFFFFFFu, 9u}) {
    set_u32(bytes, kLayerCountAt, count);
    reseal(bytes);
    EXPECT_DECODE_ERROR(bytes, "layer count " + std::to_string(count) +
                                   " cannot fit in the 82 bytes after the header");
  }
  // 8 records of 10 bytes would fit: the layers are then read, and the fifth is truncated.
  set_u32(bytes, kLayerCountAt, 8);
  reseal(bytes);
  EXPECT_DECODE_ERROR(bytes, "payload truncated in layer 4");
}

TEST(WireDecode, RejectsHostileCountsWithoutAllocatingThem) {
  // Dense float32 of 2^32 - 1 values (16 GiB) claimed by a record that holds 4 bytes of values.
  Bytes dense = single_layer(dense_f32(1));
  set_u32(dense, kNumelAt, kU32Max);
  set_u32(dense, kCountAt, kU32Max);
  reseal(dense);
  EXPECT_DECODE_ERROR(dense, "needs 17179869180 more bytes, but only 4 remain");
  // 2^32 - 1 u32 indices.
  Bytes sparse = single_layer(u32_layer());
  set_u32(sparse, kNumelAt, kU32Max);
  set_u32(sparse, kCountAt, kU32Max);
  reseal(sparse);
  EXPECT_DECODE_ERROR(sparse, "needs 17179869180 more bytes");
  // A bitmap of 2^32 - 1 positions (512 MiB).
  Bytes record = record_head(ValueFormat::kInt8, IndexFormat::kBitmap, kU32Max, 1000);
  put_f32(record, 1.0f);
  put_u8(record, 0);
  EXPECT_DECODE_ERROR(payload_with_records(1, record),
                      "needs 536870912 more bytes, but only 0 remain");
}

TEST(WireDecode, ChecksEveryExpectation) {
  const Bytes bytes = encode(golden_message());
  Expectations match;
  match.algorithm = WireAlgorithm::kDeepSqueeze;
  match.round = 0x0102030405060708ull;
  match.sender = 0x0A0B0C0D;
  match.layer_numels = std::vector<std::uint32_t>{2, 10, 100000, kU32Max};
  EXPECT_EQ(decode_error(bytes, match), "(no error)");
  const std::string who = "payload from node 168496141, round 72623859790382856: ";

  Expectations e;
  e.algorithm = WireAlgorithm::kChoco;
  EXPECT_EQ(decode_error(bytes, e), who + "algorithm is deepsqueeze, expected choco");
  e = {};
  e.round = 5;
  EXPECT_EQ(decode_error(bytes, e),
            who + "the payload is for round 72623859790382856, expected round 5");
  e = {};
  e.sender = 4;
  EXPECT_EQ(decode_error(bytes, e), who + "the sender is node 168496141, expected node 4");
  e = {};
  e.layer_numels = std::vector<std::uint32_t>{2, 10, 100000};
  EXPECT_EQ(decode_error(bytes, e), who + "4 layers, expected 3 (the layout's segment count)");
  e.layer_numels = std::vector<std::uint32_t>{2, 10, 2304, kU32Max};
  EXPECT_EQ(decode_error(bytes, e),
            who +
                "layer 2 has 100000 scalars (numel), expected 2304 (the size of the layout's "
                "segment 2)");
}

TEST(WireDecode, ChecksumSkipsItsOwnField) {
  Bytes bytes = encode(golden_message());
  const std::uint32_t crc = payload_checksum(bytes);
  EXPECT_EQ(get_u32(bytes, kChecksumAt), crc);
  set_u32(bytes, kChecksumAt, 0xDEADBEEF);
  EXPECT_EQ(payload_checksum(bytes), crc);
  bytes[40] ^= 1;
  EXPECT_NE(payload_checksum(bytes), crc);
  EXPECT_NE(
      wire_error([&] { payload_checksum(Bytes(35)); }).find("shorter than its 36-byte header"),
      std::string::npos);
}

}  // namespace
}  // namespace lpdt::comm
