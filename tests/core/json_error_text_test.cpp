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
