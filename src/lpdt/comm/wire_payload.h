#pragma once
// The binary payload of one gossip message (docs/wire.md): what a node sends to each
// out-neighbour in one round, and the only thing the byte ledger counts. Plain C++ (no tensors),
// so that the decoder can be fuzzed on its own (tests/comm/fuzz).
//
// Layout, all integers little-endian, no padding:
//
//   header (36 bytes)
//     u8[4] magic "LPDW"
//     u16   version (kWireVersion)
//     u8    algorithm (WireAlgorithm)
//     u8    flags (0; reserved)
//     u64   round
//     u32   sender (global node id)
//     u32   layer count L
//     f32   push-sum weight
//     u32   total payload size in bytes (header included)
//     u32   CRC-32 (zlib polynomial) of every byte of the payload except these four
//   L layer records, in layout order
//     u8    value format (ValueFormat)
//     u8    index format (IndexFormat)
//     u32   numel: the layer's scalar count
//     u32   count K: values carried (K == numel for kDense, 1 <= K <= numel otherwise)
//     [int8 only] f32 scale, u8 zero point: real = scale * (code - zero_point)
//     indices (sparse only), strictly increasing positions in [0, numel):
//       kIndexU32:     K x u32
//       kDeltaVarint:  K x LEB128 varint of the gap (first: the index itself; then index minus
//                      previous index, >= 1)
//       kBitmap:       ceil(numel / 8) bytes, bit (i % 8) of byte i / 8 set for a kept position
//                      (exactly K bits set; bits past numel are 0)
//     values, in index order: K x f32 | K x bf16 (the high half of the f32) | K x u8 code
//
// The encoder picks, per layer, the smallest index format (ties: u32, then delta-varint, then
// bitmap); a layer without indices is sent dense (the simulator sends a segment whole when it
// keeps all of it). A payload is canonical: the decoder rejects any other index format, non-minimal
// varints and bitmap bits past numel, so that every message has exactly one encoding.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lpdt/core/error.h"

namespace lpdt::comm {

inline constexpr std::uint8_t kWireMagic[4] = {'L', 'P', 'D', 'W'};
inline constexpr std::uint16_t kWireVersion = 1;
inline constexpr std::size_t kHeaderBytes = 36;

enum class WireAlgorithm : std::uint8_t { kDpsgd = 0, kDeepSqueeze = 1, kChoco = 2 };
enum class ValueFormat : std::uint8_t { kFloat32 = 0, kBfloat16 = 1, kInt8 = 2 };
enum class IndexFormat : std::uint8_t { kDense = 0, kIndexU32 = 1, kDeltaVarint = 2, kBitmap = 3 };

// A malformed or unexpected payload. Every decoding failure is one of these, never an
// out-of-bounds read or write.
class WireError : public UserError {
 public:
  using UserError::UserError;
};

// One layer of a message. Values are held in their wire type: exactly one of f32 / bf16 / codes
// is used, by `format`, and has K entries.
struct LayerMessage {
  ValueFormat format = ValueFormat::kFloat32;
  std::uint32_t numel = 0;
  // Kept positions, strictly increasing, in [0, numel). Empty: the whole layer (dense).
  std::vector<std::uint32_t> indices;
  std::vector<float> f32;
  std::vector<std::uint16_t> bf16;  // upper 16 bits of the float32
  std::vector<std::uint8_t> codes;
  float scale = 1.0f;             // int8 only
  std::uint8_t zero_point = 0;    // int8 only

  bool dense() const { return indices.empty(); }
  std::uint32_t count() const { return dense() ? numel : static_cast<std::uint32_t>(indices.size()); }
  // The value at entry e (0 <= e < count()) as float32: f32, bf16 widened, or
  // scale * (code - zero_point).
  float value(std::size_t e) const;
};

struct Message {
  WireAlgorithm algorithm = WireAlgorithm::kChoco;
  std::uint64_t round = 0;
  std::uint32_t sender = 0;
  float push_sum_weight = 1.0f;
  std::vector<LayerMessage> layers;
};

// The bytes of each index format for K kept positions of a layer of `numel` scalars;
// `delta_varint_bytes` needs the sorted positions.
std::size_t index_u32_bytes(std::size_t count);
std::size_t bitmap_bytes(std::size_t numel);
std::size_t delta_varint_bytes(std::span<const std::uint32_t> sorted_indices);
// Bytes of one LEB128 varint.
std::size_t varint_bytes(std::uint32_t value);
// The format the encoder uses for these positions (kDense when indices is empty).
IndexFormat choose_index_format(std::uint32_t numel, std::span<const std::uint32_t> sorted_indices);

// Bytes of one layer record, and of a whole message, exactly as encode() writes them.
std::size_t layer_bytes(const LayerMessage& layer);
std::size_t message_bytes(const Message& message);

// Checks a message for encoding (values count, sorted in-range indices, numel > 0); WireError
// naming the layer otherwise.
void validate(const Message& message);
// Encodes (validate() first). The result has exactly message_bytes(message) bytes.
std::vector<std::uint8_t> encode(const Message& message);

// What a receiver knows in advance; every field that is set is checked.
struct Expectations {
  std::optional<WireAlgorithm> algorithm;
  std::optional<std::uint64_t> round;
  std::optional<std::uint32_t> sender;
  std::optional<std::vector<std::uint32_t>> layer_numels;  // the layout's segment sizes
};

// Decodes an untrusted payload. WireError with what is wrong (magic, version, size, checksum,
// a layer's format, count, an index out of range or out of order, trailing bytes, a field that
// differs from `expect`), naming the layer and byte offset where it applies.
Message decode(std::span<const std::uint8_t> bytes, const Expectations& expect = {});

// CRC-32 of the payload with its checksum field skipped (bytes 32..35); payload must hold at
// least the header. Exposed for tests that corrupt a payload and re-seal it.
std::uint32_t payload_checksum(std::span<const std::uint8_t> payload);
// Rewrites the checksum field of an encoded payload from its other bytes.
void reseal(std::span<std::uint8_t> payload);

}  // namespace lpdt::comm
