// json_error_text (core/json_error_text.h) on the JSON library's real exceptions: the line and
// column stay, the library's exception name goes; other messages pass unchanged.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "lpdt/core/json_error_text.h"

namespace lpdt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(JsonErrorText, AParseErrorKeepsItsPlaceAndLosesTheLibraryName) {
  try {
    const nlohmann::json parsed = nlohmann::json::parse("{\n  \"a\": x}");
    FAIL() << "no parse error: " << parsed.dump();
  } catch (const nlohmann::json::exception& e) {
    const std::string text = json_error_text(e);
    EXPECT_THAT(text, StartsWith("line 2, column 8: syntax error"));
    EXPECT_THAT(text, Not(HasSubstr("json.exception")));
  }
}

TEST(JsonErrorText, OtherJsonErrorsLoseOnlyTheLibraryName) {
  try {
    const nlohmann::json& value = nlohmann::json::array().at("key");
    FAIL() << "no type error: " << value.dump();
  } catch (const nlohmann::json::exception& e) {
    EXPECT_EQ(json_error_text(e), "cannot use at() with array");
  }
  EXPECT_EQ(json_error_text(std::runtime_error("[json.exception but no end")),
            "[json.exception but no end");
  EXPECT_EQ(json_error_text(std::runtime_error("plain")), "plain");
}

}  // namespace
}  // namespace lpdt

namespace lpdt {
namespace {

TEST(JsonExcerpt, ShortValuesAreTheirCompactText) {
  const auto value = nlohmann::json::parse(R"({"b": [1, 2.5, "x"], "a": null})");
  EXPECT_EQ(json_excerpt(value), value.dump());
  EXPECT_EQ(json_excerpt(nlohmann::json(3)), "3");
  EXPECT_EQ(json_excerpt(nlohmann::json::array()), "[]");
}

TEST(JsonExcerpt, LongValuesAreCutAtTheLimitAndMarked) {
  const nlohmann::json numbers(std::vector<int>(100, 7));
  EXPECT_EQ(json_excerpt(numbers, 10), "[7,7,7,7,7...");
  EXPECT_EQ(json_excerpt(nlohmann::json(std::string(100, 'y')), 5), "\"yyyy...");
  // A cut never splits a UTF-8 character ("é" is two bytes).
  EXPECT_EQ(json_excerpt(nlohmann::json("\xc3\xa9\xc3\xa9\xc3\xa9"), 4), "\"\xc3\xa9...");
}

TEST(JsonExcerpt, DeepNestingIsElided) {
  nlohmann::json deep = 1;
  for (int i = 0; i < 50'000; ++i) deep = nlohmann::json::array({std::move(deep)});
  EXPECT_EQ(json_excerpt(deep, 100), "[[[[[[[[[...]]]]]]]]]");
}

}  // namespace
}  // namespace lpdt
