#include "lpdt/exp/data_fingerprint.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>

namespace lpdt::exp {
namespace {

// CRC-32 of a CPU tensor's bytes, as 8 hex digits.
std::string crc32_text(const at::Tensor& tensor) {
  const at::Tensor bytes = tensor.defined() ? tensor.contiguous().cpu() : at::Tensor();
  uLong crc = crc32(0L, Z_NULL, 0);
  if (bytes.defined()) {
    const auto* data = static_cast<const Bytef*>(bytes.data_ptr());
    std::size_t left = bytes.nbytes();
    constexpr std::size_t kChunk = std::size_t{1} << 30;  // crc32 takes a 32-bit length
    while (left > 0) {
      const std::size_t now = std::min(left, kChunk);
      crc = crc32(crc, data, static_cast<uInt>(now));
      data += now;
      left -= now;
    }
  }
  char text[16];
  std::snprintf(text, sizeof text, "%08lx", static_cast<unsigned long>(crc));
  return text;
}

nlohmann::json split_fingerprint(const data::Dataset& split) {
  return {{"samples", split.size()},
          {"inputs_crc32", crc32_text(split.is_text() ? split.tokens : split.images)},
          {"labels_crc32", crc32_text(split.labels)}};
}

}  // namespace

nlohmann::json data_fingerprint(const data::Dataset& train, const data::Dataset& test) {
  return {{"train", split_fingerprint(train)}, {"test", split_fingerprint(test)}};
}

}  // namespace lpdt::exp
