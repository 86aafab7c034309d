// The wire payload codec (docs/wire.md). The layout comment in wire_payload.h is the
// specification; section names below ("header", "layer records", "indices", "values") refer to it.
// Plain C++ and zlib only, so that the decoder compiles on its own for libFuzzer.
#include "lpdt/comm/wire_payload.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace lpdt::comm {
namespace {

// Header field offsets ("header" in wire_payload.h).
constexpr std::size_t kVersionOffset = 4;
constexpr std::size_t kAlgorithmOffset = 6;
constexpr std::size_t kFlagsOffset = 7;
constexpr std::size_t kRoundOffset = 8;
constexpr std::size_t kSenderOffset = 16;
constexpr std::size_t kLayerCountOffset = 20;
constexpr std::size_t kWeightOffset = 24;
constexpr std::size_t kTotalSizeOffset = 28;
constexpr std::size_t kChecksumOffset = 32;
static_assert(kChecksumOffset + 4 == kHeaderBytes);

// Every layer record starts with value format, index format, numel and count (1 + 1 + 4 + 4).
constexpr std::size_t kLayerFixedBytes = 10;
// The int8 value format adds f32 scale and u8 zero point.
constexpr std::size_t kInt8ParameterBytes = 5;
// A 32-bit value needs at most ceil(32 / 7) LEB128 bytes.
constexpr std::size_t kMaxVarintBytes = 5;
constexpr std::uint64_t kMaxPayloadBytes = std::numeric_limits<std::uint32_t>::max();

std::string algorithm_name(WireAlgorithm algorithm) {
  switch (algorithm) {
    case WireAlgorithm::kDpsgd:
      return "dpsgd";
    case WireAlgorithm::kDeepSqueeze:
      return "deepsqueeze";
    case WireAlgorithm::kChoco:
      return "choco";
  }
  return "unknown algorithm " + std::to_string(static_cast<unsigned>(algorithm));
}

std::string value_format_name(ValueFormat format) {
  switch (format) {
    case ValueFormat::kFloat32:
      return "float32";
    case ValueFormat::kBfloat16:
      return "bfloat16";
    case ValueFormat::kInt8:
      return "int8";
  }
  return "unknown value format " + std::to_string(static_cast<unsigned>(format));
}

std::string index_format_name(IndexFormat format) {
  switch (format) {
    case IndexFormat::kDense:
      return "dense";
    case IndexFormat::kIndexU32:
      return "u32 indices";
    case IndexFormat::kDeltaVarint:
      return "delta varint";
    case IndexFormat::kBitmap:
      return "bitmap";
  }
  return "unknown index format " + std::to_string(static_cast<unsigned>(format));
}

bool valid_algorithm(std::uint8_t code) {
  return code <= static_cast<std::uint8_t>(WireAlgorithm::kChoco);
}
bool valid_value_format(std::uint8_t code) {
  return code <= static_cast<std::uint8_t>(ValueFormat::kInt8);
}
bool valid_index_format(std::uint8_t code) {
  return code <= static_cast<std::uint8_t>(IndexFormat::kBitmap);
}

// Bytes of one value on the wire ("values").
std::size_t value_bytes(ValueFormat format) {
  switch (format) {
    case ValueFormat::kFloat32:
      return 4;
    case ValueFormat::kBfloat16:
      return 2;
    case ValueFormat::kInt8:
      return 1;
  }
  return 0;
}

std::size_t index_bytes(IndexFormat format, std::uint32_t numel,
                        std::span<const std::uint32_t> sorted_indices) {
  switch (format) {
    case IndexFormat::kDense:
      return 0;
    case IndexFormat::kIndexU32:
      return index_u32_bytes(sorted_indices.size());
    case IndexFormat::kDeltaVarint:
      return delta_varint_bytes(sorted_indices);
    case IndexFormat::kBitmap:
      return bitmap_bytes(numel);
  }
  return 0;
}

// A float as text that reads back to the same value ("nan", "-0.5", "1e-30"), for messages.
std::string float_text(float value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", static_cast<double>(value));
  return text;
}

std::string hex32(std::uint32_t value) {
  static const char* digits = "0123456789abcdef";
  std::string text = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) text += digits[(value >> shift) & 0xF];
  return text;
}

std::string hex_bytes(std::span<const std::uint8_t> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string text;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i > 0) text += ' ';
    text += digits[bytes[i] >> 4];
    text += digits[bytes[i] & 0xF];
  }
  return text;
}

// Little-endian writes, byte by byte, so that the output does not depend on the host's order.
class Writer {
 public:
  explicit Writer(std::size_t capacity) { bytes_.reserve(capacity); }

  void u8(std::uint8_t value) { bytes_.push_back(value); }
  void u16(std::uint16_t value) { little_endian(value, 2); }
  void u32(std::uint32_t value) { little_endian(value, 4); }
  void u64(std::uint64_t value) { little_endian(value, 8); }
  void f32(float value) { u32(std::bit_cast<std::uint32_t>(value)); }
  // LEB128: 7 bits per byte, low bits first, the high bit set on every byte but the last.
  void varint(std::uint32_t value) {
    while (value >= 0x80) {
      u8(static_cast<std::uint8_t>(value | 0x80));
      value >>= 7;
    }
    u8(static_cast<std::uint8_t>(value));
  }
  void raw(std::span<const std::uint8_t> data) {
    bytes_.insert(bytes_.end(), data.begin(), data.end());
  }
  // A run of values: one copy on a little-endian host (the wire's byte order), else value by
  // value. The per-value path pushed 4 bytes at a time and ran at ~0.6 GB/s (docs/benchmarks.md).
  template <typename T>
  void values(std::span<const T> data) {
    static_assert(std::is_trivially_copyable_v<T> && (sizeof(T) == 2 || sizeof(T) == 4));
    if constexpr (std::endian::native == std::endian::little) {
      const std::size_t at = bytes_.size();
      bytes_.resize(at + data.size_bytes());
      if (!data.empty()) std::memcpy(bytes_.data() + at, data.data(), data.size_bytes());
    } else {
      for (const T value : data) {
        if constexpr (sizeof(T) == 2) {
          u16(std::bit_cast<std::uint16_t>(value));
        } else {
          u32(std::bit_cast<std::uint32_t>(value));
        }
      }
    }
  }

  std::vector<std::uint8_t>& bytes() { return bytes_; }

 private:
  void little_endian(std::uint64_t value, int width) {
    for (int i = 0; i < width; ++i) bytes_.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
  }

  std::vector<std::uint8_t> bytes_;
};

std::uint64_t read_little_endian(const std::uint8_t* data, int width) {
  std::uint64_t value = 0;
  for (int i = 0; i < width; ++i) value |= static_cast<std::uint64_t>(data[i]) << (8 * i);
  return value;
}

void write_u32_at(std::span<std::uint8_t> bytes, std::size_t offset, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[offset + i] = static_cast<std::uint8_t>(value >> (8 * i));
}

// Reads the layer records of an untrusted payload: every read is bounds-checked against the
// payload's end and a shortfall is a WireError naming the layer and offset.
class Cursor {
 public:
  Cursor(std::span<const std::uint8_t> bytes, std::size_t offset, std::string who)
      : bytes_(bytes), offset_(offset), who_(std::move(who)) {}

  void enter_layer(std::size_t layer) { layer_ = layer; }
  std::size_t offset() const { return offset_; }
  std::size_t remaining() const { return bytes_.size() - offset_; }
  const std::string& who() const { return who_; }

  // Throws unless `count` more bytes exist; called before reading and before sizing any buffer
  // from a count read off the wire.
  void need(std::uint64_t count) const {
    if (count > remaining()) {
      throw WireError(who_ + ": payload truncated in layer " + std::to_string(layer_) +
                      " at byte offset " + std::to_string(offset_) + ": needs " +
                      std::to_string(count) + " more bytes, but only " +
                      std::to_string(remaining()) + " remain");
    }
  }

  std::uint8_t u8() { return static_cast<std::uint8_t>(take(1)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(take(4)); }
  float f32() { return std::bit_cast<float>(u32()); }
  std::span<const std::uint8_t> span(std::size_t count) {
    need(count);
    const auto result = bytes_.subspan(offset_, count);
    offset_ += count;
    return result;
  }

 private:
  std::uint64_t take(int width) {
    need(static_cast<std::uint64_t>(width));
    const std::uint64_t value = read_little_endian(bytes_.data() + offset_, width);
    offset_ += static_cast<std::size_t>(width);
    return value;
  }

  std::span<const std::uint8_t> bytes_;
  std::size_t offset_;
  std::size_t layer_ = 0;
  std::string who_;
};

std::uint32_t crc_update(std::uint32_t crc, std::span<const std::uint8_t> data) {
  // zlib's length type is uInt; feed it in chunks so that any span size is safe.
  constexpr std::size_t kChunk = std::size_t{1} << 30;
  uLong value = crc;
  while (!data.empty()) {
    const std::size_t n = std::min(data.size(), kChunk);
    value = ::crc32(value, data.data(), static_cast<uInt>(n));
    data = data.subspan(n);
  }
  return static_cast<std::uint32_t>(value);
}

// ---- validation of a message to encode -------------------------------------------------------

void validate_layer(const LayerMessage& layer, std::size_t index, const std::string& who) {
  const std::string where = who + ": layer " + std::to_string(index);
  if (!valid_value_format(static_cast<std::uint8_t>(layer.format))) {
    throw WireError(where + " has value format code " +
                    std::to_string(static_cast<unsigned>(layer.format)) +
                    ", expected 0 (float32), 1 (bfloat16) or 2 (int8)");
  }
  if (layer.numel == 0) {
    throw WireError(where + " has numel 0; a layer must have at least one scalar");
  }
  if (layer.indices.size() > layer.numel) {
    throw WireError(where + " has " + std::to_string(layer.indices.size()) + " indices but only " +
                    std::to_string(layer.numel) + " scalars; expected at most numel indices");
  }
  for (std::size_t e = 0; e < layer.indices.size(); ++e) {
    const std::uint32_t position = layer.indices[e];
    if (position >= layer.numel) {
      throw WireError(where + ": index " + std::to_string(position) + " at entry " +
                      std::to_string(e) + " is out of range; expected positions in [0, " +
                      std::to_string(layer.numel) + ")");
    }
    if (e > 0 && position <= layer.indices[e - 1]) {
      throw WireError(where + ": index " + std::to_string(position) + " at entry " +
                      std::to_string(e) + " follows index " + std::to_string(layer.indices[e - 1]) +
                      "; expected strictly increasing indices");
    }
  }
  const std::size_t count = layer.count();
  struct Vector {
    ValueFormat format;
    std::size_t size;
  };
  const Vector vectors[] = {{ValueFormat::kFloat32, layer.f32.size()},
                            {ValueFormat::kBfloat16, layer.bf16.size()},
                            {ValueFormat::kInt8, layer.codes.size()}};
  for (const auto& vector : vectors) {
    const std::size_t expected = vector.format == layer.format ? count : 0;
    if (vector.size != expected) {
      throw WireError(where + " (" + value_format_name(layer.format) + ", " +
                      (layer.dense() ? "dense" : "sparse") + ") holds " +
                      std::to_string(vector.size) + " " + value_format_name(vector.format) +
                      " values, expected " + std::to_string(expected));
    }
  }
  if (layer.format == ValueFormat::kInt8 && !(std::isfinite(layer.scale) && layer.scale > 0.0f)) {
    throw WireError(where + " has int8 scale " + float_text(layer.scale) +
                    "; expected a finite scale > 0");
  }
}

std::string message_who(const Message& message) {
  return "message from node " + std::to_string(message.sender) + ", round " +
         std::to_string(message.round);
}

// ---- decoding of one layer record ------------------------------------------------------------

// One LEB128 varint of at most 5 bytes whose value fits 32 bits, in its shortest form (a longer
// form would decode to the same value but re-encode differently; payloads are canonical).
std::uint32_t read_varint(Cursor& cursor, std::size_t layer, std::size_t entry) {
  const std::size_t start = cursor.offset();
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < kMaxVarintBytes; ++i) {
    const std::uint8_t byte = cursor.u8();
    value |= static_cast<std::uint64_t>(byte & 0x7F) << (7 * i);
    if ((byte & 0x80) != 0) continue;
    // Error text only on the error paths: this runs once per index.
    const auto where = [&] {
      return cursor.who() + ": layer " + std::to_string(layer) + ", varint " +
             std::to_string(entry) + " at byte offset " + std::to_string(start);
    };
    if (i > 0 && byte == 0) {
      throw WireError(where() + " is not in its shortest form (a final byte of 0 after " +
                      std::to_string(i) + " continuation bytes); payloads are canonical");
    }
    if (value > std::numeric_limits<std::uint32_t>::max()) {
      throw WireError(where() + " has value " + std::to_string(value) +
                      ", which does not fit in 32 bits");
    }
    return static_cast<std::uint32_t>(value);
  }
  throw WireError(cursor.who() + ": layer " + std::to_string(layer) + ", varint " +
                  std::to_string(entry) + " at byte offset " + std::to_string(start) +
                  " is longer than " + std::to_string(kMaxVarintBytes) +
                  " bytes; expected a 32-bit LEB128 value");
}

void check_next_index(const Cursor& cursor, std::size_t layer, std::size_t entry,
                      std::uint64_t position, std::optional<std::uint32_t> previous,
                      std::uint32_t numel) {
  const auto where = [&] {
    return cursor.who() + ": layer " + std::to_string(layer) + ", index " + std::to_string(entry);
  };
  if (previous && position <= *previous) {
    throw WireError(where() + " is " + std::to_string(position) + " after " +
                    std::to_string(*previous) + "; expected strictly increasing indices");
  }
  if (position >= numel) {
    throw WireError(where() + " is " + std::to_string(position) + ", out of range; expected [0, " +
                    std::to_string(numel) + ")");
  }
}

std::vector<std::uint32_t> read_u32_indices(Cursor& cursor, std::size_t layer, std::uint32_t count,
                                            std::uint32_t numel) {
  cursor.need(index_u32_bytes(count));
  std::vector<std::uint32_t> indices;
  indices.reserve(count);
  for (std::uint32_t e = 0; e < count; ++e) {
    const std::uint32_t position = cursor.u32();
    check_next_index(cursor, layer, e, position,
                     e == 0 ? std::nullopt : std::optional(indices.back()), numel);
    indices.push_back(position);
  }
  return indices;
}

std::vector<std::uint32_t> read_varint_indices(Cursor& cursor, std::size_t layer,
                                               std::uint32_t count, std::uint32_t numel) {
  cursor.need(count);  // every varint takes at least one byte
  std::vector<std::uint32_t> indices;
  indices.reserve(count);
  for (std::uint32_t e = 0; e < count; ++e) {
    const std::uint32_t gap = read_varint(cursor, layer, e);
    if (e == 0) {
      check_next_index(cursor, layer, e, gap, std::nullopt, numel);
      indices.push_back(gap);
      continue;
    }
    const std::uint32_t previous = indices.back();
    if (gap == 0) {
      throw WireError(cursor.who() + ": layer " + std::to_string(layer) + ", index " +
                      std::to_string(e) + " has gap 0 after index " + std::to_string(previous) +
                      "; expected strictly increasing indices (gaps >= 1)");
    }
    const std::uint64_t position = std::uint64_t{previous} + gap;
    if (position > std::numeric_limits<std::uint32_t>::max()) {
      throw WireError(cursor.who() + ": layer " + std::to_string(layer) + ", index " +
                      std::to_string(e) + " overflows 32 bits (" + std::to_string(previous) +
                      " + gap " + std::to_string(gap) + "); expected positions in [0, " +
                      std::to_string(numel) + ")");
    }
    check_next_index(cursor, layer, e, position, previous, numel);
    indices.push_back(static_cast<std::uint32_t>(position));
  }
  return indices;
}

std::vector<std::uint32_t> read_bitmap_indices(Cursor& cursor, std::size_t layer,
                                               std::uint32_t count, std::uint32_t numel) {
  const std::size_t start = cursor.offset();
  const auto bitmap = cursor.span(bitmap_bytes(numel));
  const std::string where = cursor.who() + ": layer " + std::to_string(layer) +
                            ", bitmap at byte offset " + std::to_string(start);
  const unsigned used_bits = numel % 8;
  if (used_bits != 0) {
    const std::uint8_t past_numel = static_cast<std::uint8_t>(bitmap.back() >> used_bits);
    if (past_numel != 0) {
      throw WireError(where + " has bits set past numel " + std::to_string(numel) + " (last byte " +
                      hex_bytes(bitmap.last(1)) + "); expected them to be 0");
    }
  }
  std::uint64_t set_bits = 0;
  for (const std::uint8_t byte : bitmap) set_bits += static_cast<unsigned>(std::popcount(byte));
  if (set_bits != count) {
    throw WireError(where + " has " + std::to_string(set_bits) + " bits set, expected the count " +
                    std::to_string(count));
  }
  std::vector<std::uint32_t> indices;
  indices.reserve(count);
  for (std::size_t b = 0; b < bitmap.size(); ++b) {
    for (unsigned bit = 0; bit < 8; ++bit) {
      if ((bitmap[b] >> bit) & 1u) indices.push_back(static_cast<std::uint32_t>(8 * b + bit));
    }
  }
  return indices;
}

LayerMessage read_layer(Cursor& cursor, std::size_t layer_index) {
  cursor.enter_layer(layer_index);
  const std::size_t record_offset = cursor.offset();
  const std::string where = cursor.who() + ": layer " + std::to_string(layer_index) +
                            " (record at byte offset " + std::to_string(record_offset) + ")";
  const std::uint8_t value_code = cursor.u8();
  if (!valid_value_format(value_code)) {
    throw WireError(where + " has value format " + std::to_string(value_code) +
                    ", expected 0 (float32), 1 (bfloat16) or 2 (int8)");
  }
  const std::uint8_t index_code = cursor.u8();
  if (!valid_index_format(index_code)) {
    throw WireError(where + " has index format " + std::to_string(index_code) +
                    ", expected 0 (dense), 1 (u32 indices), 2 (delta varint) or 3 (bitmap)");
  }
  LayerMessage layer;
  layer.format = static_cast<ValueFormat>(value_code);
  const auto index_format = static_cast<IndexFormat>(index_code);
  layer.numel = cursor.u32();
  if (layer.numel == 0) {
    throw WireError(where + " has numel 0; a layer has at least one scalar");
  }
  const std::uint32_t count = cursor.u32();
  if (count == 0 || count > layer.numel) {
    throw WireError(where + " carries a count of " + std::to_string(count) +
                    " values; expected 1 <= count <= numel " + std::to_string(layer.numel));
  }
  if (index_format == IndexFormat::kDense && count != layer.numel) {
    throw WireError(where + " is dense but carries " + std::to_string(count) +
                    " values; expected numel " + std::to_string(layer.numel));
  }
  if (layer.format == ValueFormat::kInt8) {
    layer.scale = cursor.f32();
    layer.zero_point = cursor.u8();
    if (!(std::isfinite(layer.scale) && layer.scale > 0.0f)) {
      throw WireError(where + " has int8 scale " + float_text(layer.scale) +
                      "; expected a finite scale > 0");
    }
  }
  switch (index_format) {
    case IndexFormat::kDense:
      break;
    case IndexFormat::kIndexU32:
      layer.indices = read_u32_indices(cursor, layer_index, count, layer.numel);
      break;
    case IndexFormat::kDeltaVarint:
      layer.indices = read_varint_indices(cursor, layer_index, count, layer.numel);
      break;
    case IndexFormat::kBitmap:
      layer.indices = read_bitmap_indices(cursor, layer_index, count, layer.numel);
      break;
  }
  if (index_format != IndexFormat::kDense) {
    // One encoding per message: the encoder always sends the smallest index format.
    const IndexFormat canonical = choose_index_format(layer.numel, layer.indices);
    if (canonical != index_format) {
      const std::size_t used = index_bytes(index_format, layer.numel, layer.indices);
      const std::size_t best = index_bytes(canonical, layer.numel, layer.indices);
      throw WireError(
          where + " uses index format " + index_format_name(index_format) + " (" +
          std::to_string(used) + " bytes) but " + index_format_name(canonical) + " (" +
          std::to_string(best) + " bytes) is " +
          (best < used ? "smaller" : "as small and comes first (ties: u32, delta varint, bitmap)") +
          "; payloads are canonical");
    }
  }
  const std::size_t width = value_bytes(layer.format);
  const auto values = cursor.span(std::size_t{count} * width);
  switch (layer.format) {
    case ValueFormat::kFloat32:
      layer.f32.resize(count);
      if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(layer.f32.data(), values.data(), values.size());  // the wire's byte order
      } else {
        for (std::uint32_t e = 0; e < count; ++e) {
          layer.f32[e] = std::bit_cast<float>(static_cast<std::uint32_t>(
              read_little_endian(values.data() + 4 * std::size_t{e}, 4)));
        }
      }
      break;
    case ValueFormat::kBfloat16:
      layer.bf16.resize(count);
      if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(layer.bf16.data(), values.data(), values.size());
      } else {
        for (std::uint32_t e = 0; e < count; ++e) {
          layer.bf16[e] =
              static_cast<std::uint16_t>(read_little_endian(values.data() + 2 * std::size_t{e}, 2));
        }
      }
      break;
    case ValueFormat::kInt8:
      layer.codes.assign(values.begin(), values.end());
      break;
  }
  return layer;
}

}  // namespace

// ---- layer values ----------------------------------------------------------------------------

float LayerMessage::value(std::size_t e) const {
  switch (format) {
    case ValueFormat::kFloat32:
      return f32[e];
    case ValueFormat::kBfloat16:
      return std::bit_cast<float>(static_cast<std::uint32_t>(bf16[e]) << 16);
    case ValueFormat::kInt8:
      return scale * static_cast<float>(static_cast<int>(codes[e]) - static_cast<int>(zero_point));
  }
  return 0.0f;
}

// ---- sizes -----------------------------------------------------------------------------------

std::size_t index_u32_bytes(std::size_t count) { return 4 * count; }

std::size_t bitmap_bytes(std::size_t numel) { return numel / 8 + (numel % 8 != 0 ? 1 : 0); }

std::size_t varint_bytes(std::uint32_t value) {
  std::size_t bytes = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++bytes;
  }
  return bytes;
}

std::size_t delta_varint_bytes(std::span<const std::uint32_t> sorted_indices) {
  std::size_t bytes = 0;
  std::uint32_t previous = 0;
  for (std::size_t e = 0; e < sorted_indices.size(); ++e) {
    bytes += varint_bytes(e == 0 ? sorted_indices[e] : sorted_indices[e] - previous);
    previous = sorted_indices[e];
  }
  return bytes;
}

IndexFormat choose_index_format(std::uint32_t numel,
                                std::span<const std::uint32_t> sorted_indices) {
  if (sorted_indices.empty()) return IndexFormat::kDense;
  const std::size_t u32 = index_u32_bytes(sorted_indices.size());
  const std::size_t varint = delta_varint_bytes(sorted_indices);
  const std::size_t bitmap = bitmap_bytes(numel);
  // Ties go to the earlier format in this order: u32, delta varint, bitmap.
  if (u32 <= varint && u32 <= bitmap) return IndexFormat::kIndexU32;
  if (varint <= bitmap) return IndexFormat::kDeltaVarint;
  return IndexFormat::kBitmap;
}

std::size_t layer_bytes(const LayerMessage& layer) {
  std::size_t bytes = kLayerFixedBytes;
  if (layer.format == ValueFormat::kInt8) bytes += kInt8ParameterBytes;
  bytes += index_bytes(choose_index_format(layer.numel, layer.indices), layer.numel, layer.indices);
  bytes += std::size_t{layer.count()} * value_bytes(layer.format);
  return bytes;
}

std::size_t message_bytes(const Message& message) {
  std::size_t bytes = kHeaderBytes;
  for (const auto& layer : message.layers) bytes += layer_bytes(layer);
  return bytes;
}

// ---- encoding --------------------------------------------------------------------------------

void validate(const Message& message) {
  const std::string who = message_who(message);
  if (!valid_algorithm(static_cast<std::uint8_t>(message.algorithm))) {
    throw WireError(who + " has algorithm code " +
                    std::to_string(static_cast<unsigned>(message.algorithm)) +
                    ", expected 0 (dpsgd), 1 (deepsqueeze) or 2 (choco)");
  }
  for (std::size_t i = 0; i < message.layers.size(); ++i) validate_layer(message.layers[i], i, who);
  const std::size_t total = message_bytes(message);
  if (total > kMaxPayloadBytes) {
    throw WireError(who + " would take " + std::to_string(total) +
                    " bytes; a payload holds at most " + std::to_string(kMaxPayloadBytes) +
                    " bytes (its size field is 32 bits)");
  }
}

std::vector<std::uint8_t> encode(const Message& message) {
  validate(message);
  const std::size_t total = message_bytes(message);
  Writer out(total);
  // header
  out.raw(kWireMagic);
  out.u16(kWireVersion);
  out.u8(static_cast<std::uint8_t>(message.algorithm));
  out.u8(0);  // flags: reserved
  out.u64(message.round);
  out.u32(message.sender);
  out.u32(static_cast<std::uint32_t>(message.layers.size()));
  out.f32(message.push_sum_weight);
  out.u32(static_cast<std::uint32_t>(total));
  out.u32(0);  // checksum, sealed below
  // layer records
  for (const auto& layer : message.layers) {
    const IndexFormat index_format = choose_index_format(layer.numel, layer.indices);
    out.u8(static_cast<std::uint8_t>(layer.format));
    out.u8(static_cast<std::uint8_t>(index_format));
    out.u32(layer.numel);
    out.u32(layer.count());
    if (layer.format == ValueFormat::kInt8) {
      out.f32(layer.scale);
      out.u8(layer.zero_point);
    }
    switch (index_format) {
      case IndexFormat::kDense:
        break;
      case IndexFormat::kIndexU32:
        for (const std::uint32_t position : layer.indices) out.u32(position);
        break;
      case IndexFormat::kDeltaVarint: {
        std::uint32_t previous = 0;
        for (std::size_t e = 0; e < layer.indices.size(); ++e) {
          out.varint(e == 0 ? layer.indices[e] : layer.indices[e] - previous);
          previous = layer.indices[e];
        }
        break;
      }
      case IndexFormat::kBitmap: {
        std::vector<std::uint8_t> bitmap(bitmap_bytes(layer.numel), 0);
        for (const std::uint32_t position : layer.indices) {
          bitmap[position / 8] |= static_cast<std::uint8_t>(1u << (position % 8));
        }
        out.raw(bitmap);
        break;
      }
    }
    switch (layer.format) {
      case ValueFormat::kFloat32:
        out.values(std::span<const float>(layer.f32));
        break;
      case ValueFormat::kBfloat16:
        out.values(std::span<const std::uint16_t>(layer.bf16));
        break;
      case ValueFormat::kInt8:
        out.raw(layer.codes);
        break;
    }
  }
  LPDT_CHECK(out.bytes().size() == total, "encode wrote " + std::to_string(out.bytes().size()) +
                                              " bytes, message_bytes() says " +
                                              std::to_string(total));
  reseal(out.bytes());
  return std::move(out.bytes());
}

// ---- checksum --------------------------------------------------------------------------------

std::uint32_t payload_checksum(std::span<const std::uint8_t> payload) {
  if (payload.size() < kHeaderBytes) {
    throw WireError("wire payload of " + std::to_string(payload.size()) +
                    " bytes is shorter than its " + std::to_string(kHeaderBytes) + "-byte header");
  }
  std::uint32_t crc = static_cast<std::uint32_t>(::crc32(0L, Z_NULL, 0));
  crc = crc_update(crc, payload.first(kChecksumOffset));
  crc = crc_update(crc, payload.subspan(kHeaderBytes));
  return crc;
}

void reseal(std::span<std::uint8_t> payload) {
  write_u32_at(payload, kChecksumOffset, payload_checksum(payload));
}

// ---- decoding --------------------------------------------------------------------------------

Message decode(std::span<const std::uint8_t> bytes, const Expectations& expect) {
  // header, checked in the order of docs/wire.md "Decoder checks"
  if (bytes.size() < kHeaderBytes) {
    throw WireError("wire payload of " + std::to_string(bytes.size()) +
                    " bytes is shorter than its " + std::to_string(kHeaderBytes) + "-byte header");
  }
  if (std::memcmp(bytes.data(), kWireMagic, sizeof kWireMagic) != 0) {
    throw WireError(
        "wire payload starts with bytes " + hex_bytes(bytes.first(4)) +
        ", expected the magic \"LPDW\" (4c 50 44 57); it is not an lpdt gossip payload");
  }
  const auto header_u32 = [&](std::size_t offset) {
    return static_cast<std::uint32_t>(read_little_endian(bytes.data() + offset, 4));
  };
  const auto version =
      static_cast<std::uint16_t>(read_little_endian(bytes.data() + kVersionOffset, 2));
  if (version != kWireVersion) {
    throw WireError("wire payload has format version " + std::to_string(version) +
                    "; this build reads version " + std::to_string(kWireVersion) + " only");
  }
  const std::uint32_t total_size = header_u32(kTotalSizeOffset);
  if (total_size != bytes.size()) {
    throw WireError("wire payload header gives a total size of " + std::to_string(total_size) +
                    " bytes, but " + std::to_string(bytes.size()) + " bytes were received");
  }
  const std::uint32_t stored_crc = header_u32(kChecksumOffset);
  const std::uint32_t computed_crc = payload_checksum(bytes);
  if (stored_crc != computed_crc) {
    throw WireError("wire payload checksum mismatch: the header says " + hex32(stored_crc) +
                    ", the bytes give " + hex32(computed_crc) + "; the payload is corrupt");
  }

  Message message;
  message.round = read_little_endian(bytes.data() + kRoundOffset, 8);
  message.sender = header_u32(kSenderOffset);
  const std::string who = "payload from node " + std::to_string(message.sender) + ", round " +
                          std::to_string(message.round);
  const std::uint8_t flags = bytes[kFlagsOffset];
  if (flags != 0) {
    throw WireError(who + ": flags byte is " + std::to_string(flags) + ", expected 0 (version " +
                    std::to_string(kWireVersion) + " defines no flags)");
  }
  const std::uint8_t algorithm = bytes[kAlgorithmOffset];
  if (!valid_algorithm(algorithm)) {
    throw WireError(who + ": algorithm code " + std::to_string(algorithm) +
                    ", expected 0 (dpsgd), 1 (deepsqueeze) or 2 (choco)");
  }
  message.algorithm = static_cast<WireAlgorithm>(algorithm);
  message.push_sum_weight = std::bit_cast<float>(header_u32(kWeightOffset));

  // layer records; the count is checked against the bytes left before any memory is reserved
  const std::uint32_t layer_count = header_u32(kLayerCountOffset);
  const std::size_t body_bytes = bytes.size() - kHeaderBytes;
  if (std::uint64_t{layer_count} * kLayerFixedBytes > body_bytes) {
    throw WireError(who + ": layer count " + std::to_string(layer_count) + " cannot fit in the " +
                    std::to_string(body_bytes) + " bytes after the header (every layer record " +
                    "takes at least " + std::to_string(kLayerFixedBytes) + " bytes)");
  }
  message.layers.reserve(layer_count);
  Cursor cursor(bytes, kHeaderBytes, who);
  for (std::uint32_t i = 0; i < layer_count; ++i) message.layers.push_back(read_layer(cursor, i));
  if (cursor.remaining() != 0) {
    throw WireError(who + ": " + std::to_string(cursor.remaining()) +
                    " trailing bytes at byte offset " + std::to_string(cursor.offset()) +
                    " after the last of " + std::to_string(layer_count) +
                    " layers; expected the payload to end there");
  }

  // what the receiver knows in advance
  if (expect.algorithm && *expect.algorithm != message.algorithm) {
    throw WireError(who + ": algorithm is " + algorithm_name(message.algorithm) + ", expected " +
                    algorithm_name(*expect.algorithm));
  }
  if (expect.round && *expect.round != message.round) {
    throw WireError(who + ": the payload is for round " + std::to_string(message.round) +
                    ", expected round " + std::to_string(*expect.round));
  }
  if (expect.sender && *expect.sender != message.sender) {
    throw WireError(who + ": the sender is node " + std::to_string(message.sender) +
                    ", expected node " + std::to_string(*expect.sender));
  }
  if (expect.layer_numels) {
    const auto& numels = *expect.layer_numels;
    if (numels.size() != message.layers.size()) {
      throw WireError(who + ": " + std::to_string(message.layers.size()) + " layers, expected " +
                      std::to_string(numels.size()) + " (the layout's segment count)");
    }
    for (std::size_t i = 0; i < numels.size(); ++i) {
      if (numels[i] != message.layers[i].numel) {
        throw WireError(who + ": layer " + std::to_string(i) + " has " +
                        std::to_string(message.layers[i].numel) + " scalars (numel), expected " +
                        std::to_string(numels[i]) + " (the size of the layout's segment " +
                        std::to_string(i) + ")");
      }
    }
  }
  return message;
}

}  // namespace lpdt::comm
