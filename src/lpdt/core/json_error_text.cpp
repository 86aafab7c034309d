#include "lpdt/core/json_error_text.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "lpdt/core/error.h"

namespace lpdt {

std::string json_error_text(const std::exception& error) {
  std::string text = error.what();
  if (text.rfind("[json.exception", 0) == 0) {
    if (const auto end = text.find("] "); end != std::string::npos) text = text.substr(end + 2);
  }
  constexpr const char* kParseErrorAt = "parse error at ";
  if (text.rfind(kParseErrorAt, 0) == 0) text = text.substr(std::strlen(kParseErrorAt));
  // The parser quotes what it last read ("last read: '...'") as raw bytes: DEL and bytes that
  // are not UTF-8 from a damaged file.
  return printable(text);
}

namespace {

constexpr int kExcerptDepth = 8;

// Appends `value` to `out` until `out` reaches `limit` characters; false once it has.
bool append_excerpt(const nlohmann::json& value, int depth, std::size_t limit, std::string& out) {
  if (out.size() >= limit) return false;
  if (!value.is_structured()) {
    out += value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return out.size() < limit;
  }
  const bool object = value.is_object();
  if (depth >= kExcerptDepth && !value.empty()) {
    out += object ? "{...}" : "[...]";
    return out.size() < limit;
  }
  out += object ? '{' : '[';
  bool first = true;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (!first) out += ',';
    first = false;
    if (object) out += nlohmann::json(it.key()).dump() + ':';
    if (!append_excerpt(*it, depth + 1, limit, out)) return false;
  }
  out += object ? '}' : ']';
  return out.size() < limit;
}

}  // namespace

std::string json_excerpt(const nlohmann::json& value, std::size_t max_chars) {
  std::string out;
  append_excerpt(value, 0, max_chars + 1, out);  // stops once longer than max_chars
  if (out.size() > max_chars) {
    std::size_t cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
    out.resize(cut);
    out += "...";
  }
  // JSON text escapes control characters but not DEL, and a string the parser was told to take
  // as it is may hold bytes that are not UTF-8.
  return printable(out);
}

}  // namespace lpdt
