#include "lpdt/core/error.h"

namespace lpdt {

namespace {

// The length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, at
// most U+10FFFF) at the start of `text`, or 0 when it does not start with one.
std::size_t utf8_sequence_length(std::string_view text) {
  const auto at = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = at(0);
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (text.size() < length || at(1) < low || at(1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (at(i) < 0x80 || at(i) > 0xBF) return 0;
  }
  return length;
}

}  // namespace

std::optional<std::size_t> first_invalid_utf8_byte(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t sequence = utf8_sequence_length(text.substr(i));
    if (sequence == 0) return i;
    i += sequence;
  }
  return std::nullopt;
}

std::string printable(std::string_view text) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7F) {
      out += text[i++];
      continue;
    }
    const std::size_t sequence = byte >= 0x80 ? utf8_sequence_length(text.substr(i)) : 0;
    if (sequence > 0) {  // a well-formed character (an accent, a symbol): as it is
      out.append(text.substr(i, sequence));
      i += sequence;
      continue;
    }
    out += "\\x";
    out += kHex[byte >> 4];
    out += kHex[byte & 0xF];
    ++i;
  }
  return out;
}

std::string printable_excerpt(std::string_view text, std::size_t most_bytes) {
  if (text.size() <= most_bytes) return printable(text);
  std::string out = printable(text.substr(0, most_bytes));  // (in steps: GCC 12 misreads a chain)
  out += "... (";
  out += std::to_string(text.size());
  out += " bytes)";
  return out;
}

std::string printable_lines(std::string_view text) {
  std::string out;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find('\n', start);
    out += printable(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return out;
    out += '\n';
    start = end + 1;
  }
}

void fail_internal(const char* condition, const char* file, int line, const std::string& message) {
  throw InternalError(std::string("internal error: ") + condition + " failed at " + file + ":" +
                      std::to_string(line) + ": " + message);
}

}  // namespace lpdt
