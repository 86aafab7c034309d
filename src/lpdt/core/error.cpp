#include "lpdt/core/error.h"

namespace lpdt {

std::string printable(std::string_view text) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    } else {
      out += c;
    }
  }
  return out;
}

void fail_internal(const char* condition, const char* file, int line, const std::string& message) {
  throw InternalError(std::string("internal error: ") + condition + " failed at " + file + ":" +
                      std::to_string(line) + ": " + message);
}

}  // namespace lpdt
