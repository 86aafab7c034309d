// double_quoted_literal (core/string_literal.h) against the two parsers that read what it
// writes: nlohmann's JSON parser (graph exports, run records) and toml++ (configurations). The
// test lives with exp because exp is the module that links both parsers.
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "lpdt/core/string_literal.h"

namespace lpdt {
namespace {

std::string parsed_as_json(const std::string& literal) {
  return nlohmann::json::parse(literal).get<std::string>();
}

std::string parsed_as_toml(const std::string& literal) {
  const toml::table table = toml::parse("v = " + literal);
  return table["v"].value<std::string>().value();
}

TEST(DoubleQuotedLiteral, EscapesQuotesBackslashesAndControlBytes) {
  EXPECT_EQ(double_quoted_literal(""), "\"\"");
  EXPECT_EQ(double_quoted_literal("ring \"a\\b\""), "\"ring \\\"a\\\\b\\\"\"");
  EXPECT_EQ(double_quoted_literal("a\tb\nc\rd"), "\"a\\tb\\nc\\rd\"");
  EXPECT_EQ(double_quoted_literal(std::string("\0\x1f\x7f", 3)), "\"\\u0000\\u001f\\u007f\"");
  EXPECT_EQ(double_quoted_literal("82 \xC2\xB1 2.8"), "\"82 \xC2\xB1 2.8\"");  // UTF-8 kept
}

// Random text of ASCII bytes (control bytes, quotes and backslashes made common) and whole UTF-8
// characters: both parsers must read back exactly the text written.
TEST(DoubleQuotedLiteral, BothParsersReadBackRandomText) {
  std::mt19937 rng(20261129);
  const std::string specials = std::string("\"\\\t\n\r\x01\x1f\x7f\0", 9);
  const std::string utf8[] = {"\xC2\xB1", "\xE2\x80\x94", "\xF0\x9F\x98\x80"};
  for (int trial = 0; trial < 500; ++trial) {
    std::string text;
    const int length = static_cast<int>(rng() % 24);
    for (int i = 0; i < length; ++i) {
      const unsigned kind = rng() % 4;
      if (kind == 0) {
        text += specials[rng() % specials.size()];
      } else if (kind == 1) {
        text += utf8[rng() % 3];
      } else {
        text += static_cast<char>(rng() % 0x80);
      }
    }
    const std::string literal = double_quoted_literal(text);
    ASSERT_EQ(parsed_as_json(literal), text) << literal;
    ASSERT_EQ(parsed_as_toml(literal), text) << literal;
  }
}

}  // namespace
}  // namespace lpdt
