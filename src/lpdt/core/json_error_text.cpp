#include "lpdt/core/json_error_text.h"

#include <cstring>

namespace lpdt {

std::string json_error_text(const std::exception& error) {
  std::string text = error.what();
  if (text.rfind("[json.exception", 0) == 0) {
    if (const auto end = text.find("] "); end != std::string::npos) text = text.substr(end + 2);
  }
  constexpr const char* kParseErrorAt = "parse error at ";
  if (text.rfind(kParseErrorAt, 0) == 0) text = text.substr(std::strlen(kParseErrorAt));
  return text;
}

}  // namespace lpdt
