// Writes the seed payloads of the wire decoder's fuzzing corpus (docs/wire.md, "Fuzzing"):
// one file per value format x index format, each with 1 to 3 small layers, named
// seed_<value format>_<index format>.bin. Deterministic, so that regenerating them changes nothing
// unless the format changes. Built and run by `scripts/fuzz_wire.sh --make-corpus`.
//
//   make_corpus <corpus folder>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "lpdt/comm/wire_payload.h"

namespace {

using lpdt::comm::IndexFormat;
using lpdt::comm::LayerMessage;
using lpdt::comm::Message;
using lpdt::comm::ValueFormat;

std::vector<std::uint32_t> sorted_sample(std::uint32_t numel, std::size_t count,
                                         std::mt19937& rng) {
  std::set<std::uint32_t> chosen;
  std::uniform_int_distribution<std::uint32_t> position(0, numel - 1);
  while (chosen.size() < count) chosen.insert(position(rng));
  return {chosen.begin(), chosen.end()};
}

// A small layer whose positions make the encoder pick `index`. The u32 format pays off only for
// positions 2^21 or more apart, so its layers are large in numel but few bytes on the wire.
LayerMessage seed_layer(ValueFormat format, IndexFormat index, std::mt19937& rng) {
  LayerMessage layer;
  layer.format = format;
  switch (index) {
    case IndexFormat::kDense:
      layer.numel = std::uniform_int_distribution<std::uint32_t>(1, 24)(rng);
      break;
    case IndexFormat::kIndexU32:
      layer.numel = 0xFFFFFFFFu;
      layer.indices = {(1u << 28) + 3, (2u << 28) + 9, (3u << 28) + 1};
      layer.indices.resize(std::uniform_int_distribution<std::size_t>(1, 3)(rng));
      break;
    case IndexFormat::kDeltaVarint:
      layer.numel = std::uniform_int_distribution<std::uint32_t>(100, 300)(rng);
      layer.indices =
          sorted_sample(layer.numel, std::uniform_int_distribution<std::size_t>(1, 4)(rng), rng);
      break;
    case IndexFormat::kBitmap:
      layer.numel = std::uniform_int_distribution<std::uint32_t>(9, 40)(rng);
      layer.indices = sorted_sample(
          layer.numel,
          std::uniform_int_distribution<std::size_t>(layer.numel / 2, layer.numel)(rng), rng);
      break;
  }
  for (std::size_t e = 0; e < layer.count(); ++e) {
    switch (format) {
      case ValueFormat::kFloat32:
        layer.f32.push_back(std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng));
        break;
      case ValueFormat::kBfloat16:
        layer.bf16.push_back(static_cast<std::uint16_t>(rng()));
        break;
      case ValueFormat::kInt8:
        layer.codes.push_back(static_cast<std::uint8_t>(rng()));
        break;
    }
  }
  if (format == ValueFormat::kInt8) {
    layer.scale = 0.0078125f;
    layer.zero_point = static_cast<std::uint8_t>(rng());
  }
  return layer;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_corpus <corpus folder>\n");
    return 2;
  }
  const std::filesystem::path folder = argv[1];
  std::filesystem::create_directories(folder);
  const char* value_names[] = {"f32", "bf16", "int8"};
  const char* index_names[] = {"dense", "u32", "varint", "bitmap"};
  std::mt19937 rng(2024);
  std::size_t total = 0;
  for (int v = 0; v < 3; ++v) {
    for (int x = 0; x < 4; ++x) {
      Message message;
      message.algorithm = static_cast<lpdt::comm::WireAlgorithm>((v + x) % 3);
      message.round = static_cast<std::uint64_t>(10 * v + x);
      message.sender = static_cast<std::uint32_t>(x);
      message.push_sum_weight = 0.5f;
      // The named combination first, then up to two layers of other formats.
      message.layers.push_back(
          seed_layer(static_cast<ValueFormat>(v), static_cast<IndexFormat>(x), rng));
      for (int extra = static_cast<int>(rng() % 3); extra > 0; --extra) {
        message.layers.push_back(seed_layer(static_cast<ValueFormat>(rng() % 3),
                                            static_cast<IndexFormat>(rng() % 4), rng));
      }
      const std::vector<std::uint8_t> bytes = lpdt::comm::encode(message);
      if (bytes[lpdt::comm::kHeaderBytes + 1] != x) {
        std::fprintf(stderr, "make_corpus: seed %s_%s did not get its index format\n",
                     value_names[v], index_names[x]);
        return 1;
      }
      const auto path =
          folder / (std::string("seed_") + value_names[v] + "_" + index_names[x] + ".bin");
      std::ofstream(path, std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()),
                 static_cast<std::streamsize>(bytes.size()));
      total += bytes.size();
    }
  }
  std::printf("make_corpus: wrote 12 seed payloads (%zu bytes) to %s\n", total, folder.c_str());
  return 0;
}
