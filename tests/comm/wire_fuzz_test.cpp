// Seeded random-mutation fuzzing of the wire decoder (docs/wire.md, "Fuzzing"): a mutated valid
// payload must either decode, and then re-encode to exactly the same bytes (payloads are
// canonical), or throw WireError. Anything else (another exception, a crash under a sanitizer)
// is a bug. The same rule holds for every file of the libFuzzer corpus (tests/comm/fuzz/corpus).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "lpdt/comm/wire_payload.h"

namespace lpdt::comm {
namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr std::size_t kSenderAt = 16;
constexpr std::size_t kLayerCountAt = 20;
constexpr std::size_t kTotalSizeAt = 28;

enum class Outcome { kDecoded, kWireError };

// Decodes `bytes` under the fuzzing rule; a failed expectation names `what` (the input).
Outcome decode_canonically(const Bytes& bytes, const std::string& what,
                           std::string* error = nullptr) {
  Message message;
  try {
    message = decode(bytes);
  } catch (const WireError& e) {
    if (error != nullptr) *error = e.what();
    return Outcome::kWireError;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": decode threw a non-WireError exception: " << e.what();
    return Outcome::kWireError;
  }
  const Bytes again = encode(message);
  EXPECT_EQ(again, bytes) << what << ": decoded, but re-encoding gives other bytes";
  return Outcome::kDecoded;
}

// A valid payload and the offsets of its u32 fields that steer the decoder.
struct Seed {
  Bytes bytes;
  std::vector<std::size_t> u32_fields;   // sender, layer count, size; each layer's numel and count
  std::vector<std::size_t> byte_fields;  // each layer's value format and index format
  std::vector<std::uint32_t> numels;
};

std::vector<std::uint32_t> sorted_sample(std::uint32_t numel, std::size_t count,
                                         std::mt19937& rng) {
  std::set<std::uint32_t> chosen;
  std::uniform_int_distribution<std::uint32_t> position(0, numel - 1);
  while (chosen.size() < count) chosen.insert(position(rng));
  return {chosen.begin(), chosen.end()};
}

// A small layer of the given value format whose positions lead to `index` (kDense: all).
LayerMessage small_layer(ValueFormat format, IndexFormat index, std::mt19937& rng) {
  LayerMessage layer;
  layer.format = format;
  switch (index) {
    case IndexFormat::kDense:
      layer.numel = std::uniform_int_distribution<std::uint32_t>(1, 64)(rng);
      break;
    case IndexFormat::kIndexU32: {  // positions at least 2^28 apart: 5 varint bytes each
      layer.numel = 0xFFFFFFFFu;
      const std::uint32_t count = std::uniform_int_distribution<std::uint32_t>(1, 4)(rng);
      for (std::uint32_t k = 1; k <= count; ++k) {
        layer.indices.push_back(k * ((1u << 28) + 1000) + static_cast<std::uint32_t>(rng() % 1000));
      }
      break;
    }
    case IndexFormat::kDeltaVarint:  // a few positions in a large layer
      layer.numel = std::uniform_int_distribution<std::uint32_t>(2000, 40000)(rng);
      layer.indices =
          sorted_sample(layer.numel, std::uniform_int_distribution<std::size_t>(1, 12)(rng), rng);
      break;
    case IndexFormat::kBitmap:  // half or more of a small layer
      layer.numel = std::uniform_int_distribution<std::uint32_t>(16, 200)(rng);
      layer.indices = sorted_sample(
          layer.numel,
          std::uniform_int_distribution<std::size_t>(layer.numel / 2, layer.numel)(rng), rng);
      break;
  }
  const std::size_t count = layer.count();
  std::uniform_int_distribution<int> byte(0, 255);
  for (std::size_t e = 0; e < count; ++e) {
    switch (format) {
      case ValueFormat::kFloat32:
        layer.f32.push_back(std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng));
        break;
      case ValueFormat::kBfloat16:
        layer.bf16.push_back(static_cast<std::uint16_t>(rng()));
        break;
      case ValueFormat::kInt8:
        layer.codes.push_back(static_cast<std::uint8_t>(byte(rng)));
        break;
    }
  }
  if (format == ValueFormat::kInt8) {
    layer.scale = std::uniform_real_distribution<float>(1e-3f, 1.0f)(rng);
    layer.zero_point = static_cast<std::uint8_t>(byte(rng));
  }
  return layer;
}

std::vector<Seed> seed_pool(std::mt19937& rng) {
  std::vector<Seed> pool;
  for (int m = 0; m < 48; ++m) {
    Message message;
    message.algorithm = static_cast<WireAlgorithm>(m % 3);
    message.round = rng() % 1000;
    message.sender = rng() % 64;
    message.push_sum_weight = std::uniform_real_distribution<float>(0.0f, 1.0f)(rng);
    // Every value format x index format appears as the first layer; up to 3 more follow.
    const int layers = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < layers; ++i) {
      const auto format = static_cast<ValueFormat>(i == 0 ? m % 3 : rng() % 3);
      const auto index = static_cast<IndexFormat>(i == 0 ? (m / 3) % 4 : rng() % 4);
      message.layers.push_back(small_layer(format, index, rng));
    }
    Seed seed;
    seed.bytes = encode(message);
    seed.u32_fields = {kSenderAt, kLayerCountAt, kTotalSizeAt};
    std::size_t record = kHeaderBytes;
    for (const auto& layer : message.layers) {
      seed.byte_fields.push_back(record);
      seed.byte_fields.push_back(record + 1);
      seed.u32_fields.push_back(record + 2);
      seed.u32_fields.push_back(record + 6);
      seed.numels.push_back(layer.numel);
      record += layer_bytes(layer);
    }
    pool.push_back(std::move(seed));
  }
  return pool;
}

void write_u32(Bytes& bytes, std::size_t at, std::uint32_t value) {
  for (int i = 0; i < 4 && at + i < bytes.size(); ++i) {
    bytes[at + i] = static_cast<std::uint8_t>(value >> (8 * i));
  }
}

// One random edit of `bytes`; the field offsets of `seed` aim some edits at the structure.
void mutate(Bytes& bytes, const Seed& seed, std::mt19937& rng) {
  const auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  switch (pick(8)) {
    case 0:  // flip one bit
      if (!bytes.empty()) bytes[pick(bytes.size())] ^= static_cast<std::uint8_t>(1u << pick(8));
      break;
    case 1:  // set a random byte
      if (!bytes.empty()) bytes[pick(bytes.size())] = static_cast<std::uint8_t>(rng());
      break;
    case 2:  // truncate
      bytes.resize(pick(bytes.size() + 1));
      break;
    case 3:  // extend with random bytes
      for (std::size_t n = 1 + pick(16); n > 0; --n)
        bytes.push_back(static_cast<std::uint8_t>(rng()));
      break;
    case 4: {  // duplicate a chunk to a random place
      if (bytes.empty()) break;
      const std::size_t from = pick(bytes.size());
      const std::size_t length = 1 + pick(std::min<std::size_t>(32, bytes.size() - from));
      const Bytes chunk(bytes.begin() + from, bytes.begin() + from + length);
      bytes.insert(bytes.begin() + pick(bytes.size() + 1), chunk.begin(), chunk.end());
      break;
    }
    case 5: {  // erase a chunk
      if (bytes.empty()) break;
      const std::size_t from = pick(bytes.size());
      const std::size_t length = 1 + pick(std::min<std::size_t>(16, bytes.size() - from));
      bytes.erase(bytes.begin() + from, bytes.begin() + from + length);
      break;
    }
    case 6: {  // an interesting value in a u32 field (or anywhere)
      const std::uint32_t numel = seed.numels[pick(seed.numels.size())];
      const std::uint32_t interesting[] = {
          0,          1,          2,
          7,          8,          0x7F,
          0x80,       0xFF,       0x100,
          0xFFFF,     0x7FFFFFFF, 0x80000000,
          0xFFFFFFFF, numel,      numel - 1,
          numel + 1,  numel / 2,  static_cast<std::uint32_t>(bytes.size())};
      const std::size_t at =
          pick(3) != 0 ? seed.u32_fields[pick(seed.u32_fields.size())] : pick(bytes.size() + 1);
      write_u32(bytes, at, interesting[pick(std::size(interesting))]);
      break;
    }
    case 7: {  // a small value in a format byte
      const std::size_t at = seed.byte_fields[pick(seed.byte_fields.size())];
      if (at < bytes.size()) bytes[at] = static_cast<std::uint8_t>(pick(6));
      break;
    }
  }
}

TEST(WireFuzz, MutatedPayloadsDecodeCanonicallyOrThrowWireError) {
  std::mt19937 rng(424242);
  const std::vector<Seed> pool = seed_pool(rng);
  constexpr int kIterations = 20000;
  int decoded = 0;
  int decoded_changed = 0;
  int past_header = 0;  // errors found in the layer records or expectations, not the header
  for (int iteration = 0; iteration < kIterations; ++iteration) {
    const Seed& seed = pool[rng() % pool.size()];
    Bytes bytes = seed.bytes;
    for (int n = 1 + static_cast<int>(rng() % 4); n > 0; --n) mutate(bytes, seed, rng);
    // Most mutants get a consistent size field and checksum, so that the structure is what the
    // decoder judges; the rest exercise the size and checksum checks.
    if (bytes.size() >= kHeaderBytes) {
      if (rng() % 10 < 8) write_u32(bytes, kTotalSizeAt, static_cast<std::uint32_t>(bytes.size()));
      if (rng() % 10 < 9) reseal(bytes);
    }
    std::string error;
    const Outcome outcome =
        decode_canonically(bytes, "iteration " + std::to_string(iteration), &error);
    if (HasFailure()) return;
    if (outcome == Outcome::kDecoded) {
      ++decoded;
      if (bytes != seed.bytes) ++decoded_changed;
    } else if (error.find(": layer ") != std::string::npos ||
               error.find("trailing bytes") != std::string::npos) {
      ++past_header;
    }
  }
  std::printf(
      "wire fuzz: %d mutants, %d decoded (%d differing from their seed), %d rejected in "
      "the layer records\n",
      kIterations, decoded, decoded_changed, past_header);
  // The mutants must reach the layer decoder, and some must stay valid (value bytes changed).
  EXPECT_GT(past_header, kIterations / 4) << "too few mutants reached the layer records";
  EXPECT_GT(decoded_changed, kIterations / 50) << "too few mutants decoded";
  EXPECT_GE(decoded, decoded_changed);
}

TEST(WireFuzz, CorpusFilesDecodeCanonicallyOrThrowWireError) {
  const std::filesystem::path corpus = LPDT_SOURCE_DIR "/tests/comm/fuzz/corpus";
  ASSERT_TRUE(std::filesystem::is_directory(corpus)) << corpus << " is missing";
  int files = 0;
  int seeds = 0;
  for (const auto& entry : std::filesystem::directory_iterator(corpus)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const Bytes bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string name = entry.path().filename().string();
    const Outcome outcome = decode_canonically(bytes, name);
    // As the libFuzzer target does: the same bytes with a consistent size field and checksum.
    if (bytes.size() >= kHeaderBytes) {
      Bytes sealed = bytes;
      write_u32(sealed, kTotalSizeAt, static_cast<std::uint32_t>(sealed.size()));
      reseal(sealed);
      decode_canonically(sealed, name + " (resealed)");
    }
    ++files;
    // The generator's files (tests/comm/fuzz/make_corpus.cpp) are valid payloads.
    if (name.starts_with("seed_")) {
      ++seeds;
      EXPECT_EQ(outcome, Outcome::kDecoded) << name << " is a seed and must decode";
    }
  }
  EXPECT_GE(seeds, 12)
      << "the corpus lost its generated seeds; run scripts/fuzz_wire.sh --make-corpus";
  EXPECT_GE(files, seeds);
}

}  // namespace
}  // namespace lpdt::comm
