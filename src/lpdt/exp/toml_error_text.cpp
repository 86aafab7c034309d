#include "lpdt/exp/toml_error_text.h"

#include <cstddef>
#include <optional>

#include "lpdt/core/error.h"

namespace lpdt {
namespace {

// Line `line` (1-based) of `text`, without its line break; empty past the end.
std::string_view line_of(std::string_view text, std::uint32_t line) {
  std::size_t begin = 0;
  for (std::uint32_t i = 1; i < line; ++i) {
    const std::size_t newline = text.find('\n', begin);
    if (newline == std::string_view::npos) return {};
    begin = newline + 1;
  }
  std::string_view rest = text.substr(begin);
  rest = rest.substr(0, rest.find('\n'));
  if (!rest.empty() && rest.back() == '\r') rest.remove_suffix(1);
  return rest;
}

std::string_view trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

// The position of the first `stop` character of `text` outside quoted parts of a TOML key
// ("basic" strings with backslash escapes, 'literal' strings); npos when there is none.
std::size_t find_outside_quotes(std::string_view text, char stop) {
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == '"' && c == '\\') {
      ++i;
    } else if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == stop) {
      return i;
    }
  }
  return std::string_view::npos;
}

// The key a line defines as the file spells it: a table header's name (`[a."b"]`, `[[a]]`) or
// the key of a `key = value` line; nullopt when the line is neither.
std::optional<std::string_view> key_written_on(std::string_view line) {
  std::string_view text = trimmed(line);
  if (text.empty()) return std::nullopt;
  if (text.front() == '[') {
    const bool array = text.size() > 1 && text[1] == '[';
    text.remove_prefix(array ? 2 : 1);
    const std::size_t end = find_outside_quotes(text, ']');
    if (end == std::string_view::npos) return std::nullopt;
    return trimmed(text.substr(0, end));
  }
  const std::size_t equals = find_outside_quotes(text, '=');
  if (equals == std::string_view::npos || equals == 0) return std::nullopt;
  return trimmed(text.substr(0, equals));
}

}  // namespace

std::string toml_error_text(std::string_view description, std::string_view source_text,
                            std::uint32_t line) {
  // toml++ quotes what it saw ("expected 'true', saw 'tr\x7F'") as raw bytes of the file:
  // escaped for the terminal (core/error.h).
  std::string text(description);
  constexpr std::string_view kRedefine = "cannot redefine existing ";
  const std::size_t at = text.find(kRedefine);
  if (at == std::string::npos) return printable(text);
  // "... cannot redefine existing <type> '<key>'": the key is what follows the first quote after
  // the type, to the end.
  const std::size_t open = text.find('\'', at + kRedefine.size());
  if (open == std::string::npos) return printable(text);
  const std::optional<std::string_view> key = key_written_on(line_of(source_text, line));
  if (!key || key->empty()) return printable(text);
  return printable(text.substr(0, open) + "'" + std::string(*key) + "'");
}

}  // namespace lpdt
