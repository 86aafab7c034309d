// The generic configuration schema, on a small schema of its own (tests/exp/config_test.cpp tests
// the experiment schema).
#include "lpdt/exp/config_schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "lpdt/core/error.h"

namespace lpdt {
namespace {

using ::testing::HasSubstr;

// The message of the ConfigError that `f` throws; a test failure if it throws nothing.
std::string config_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a ConfigError";
  return "";
}

const ConfigSchema& small_schema() {
  static const ConfigSchema schema = [] {
    ConfigSchema s("test configuration");
    s.add_bool("a.flag", true, "A flag.");
    s.add_int("a.count", 3, "A count.").at_least(1);
    s.add_float("a.rate", 0.5, "A rate.").greater_than(0).at_most(1);
    s.add_string("a.mode", "fast", "A mode.").one_of({"fast", "slow", "careful"});
    s.add_string("b.text", "", "Free text.");
    s.add_int_list("b.steps", {10, 20}, "Steps.").at_least(0);
    s.add_float_list("b.weights", {0.25, 0.75}, "Weights.").at_least(0).less_than(1);
    s.add_float("b.scale", 1e-4, "A scale, unbounded.");
    s.add_check({{"a.count", "b.steps"}, [](const Config& c) -> std::optional<std::string> {
                   if (c.get_int_list("b.steps").size() >
                       static_cast<std::size_t>(c.get_int("a.count"))) {
                     return "b.steps has more entries than a.count";
                   }
                   return std::nullopt;
                 }});
    return s;
  }();
  return schema;
}

TEST(ConfigSchemaTest, FloatsAreWrittenShortestAndReadBackExactly) {
  EXPECT_EQ(format_config_value(0.1), "0.1");
  EXPECT_EQ(format_config_value(1.0), "1.0");
  EXPECT_EQ(format_config_value(-0.5), "-0.5");
  EXPECT_EQ(format_config_value(1e-4), "1e-4");
  EXPECT_EQ(format_config_value(1e20), "1e20");
  EXPECT_EQ(format_config_value(100.0), "100.0");
  EXPECT_EQ(format_config_value(std::int64_t{-7}), "-7");
  EXPECT_EQ(format_config_value(std::vector<std::int64_t>{100, 150}), "[100, 150]");
  EXPECT_EQ(format_config_value(std::vector<double>{1, 0.5}), "[1.0, 0.5]");
  EXPECT_EQ(format_config_value(std::string("a\"b\\c\n")), "\"a\\\"b\\\\c\\n\"");

  // Every value goes through TOML and back unchanged.
  const std::vector<double> values = {
      1.0 / 3.0, 0.1 + 0.2, 1e-300, 123456789.0123, 5e-324, std::numeric_limits<double>::max()};
  for (const double value : values) {
    const Config config = small_schema().resolve_text(
        "[b]\nscale = " + format_config_value(value) + "\n", "values.toml", {});
    EXPECT_EQ(config.get_float("b.scale"), value) << format_config_value(value);
  }
}

TEST(ConfigSchemaTest, ExpectationsNameTheTypeAndRange) {
  const ConfigSchema& s = small_schema();
  EXPECT_EQ(s.at("a.flag").expectation(), "a bool (true or false)");
  EXPECT_EQ(s.at("a.count").expectation(), "an int >= 1");
  EXPECT_EQ(s.at("a.rate").expectation(), "a float in (0, 1]");
  EXPECT_EQ(s.at("a.mode").expectation(), "one of fast, slow, careful");
  EXPECT_EQ(s.at("b.text").expectation(), "a string");
  EXPECT_EQ(s.at("b.steps").expectation(), "a list of ints, each >= 0");
  EXPECT_EQ(s.at("b.weights").expectation(), "a list of floats, each in [0, 1)");
  EXPECT_EQ(s.at("b.scale").expectation(), "a float");
}

TEST(ConfigSchemaTest, ChecksRangesAtBothEnds) {
  const KeySpec& rate = small_schema().at("a.rate");
  EXPECT_FALSE(rate.check(1.0).has_value());
  EXPECT_TRUE(rate.check(0.0).has_value());
  EXPECT_TRUE(rate.check(1.0000001).has_value());
  EXPECT_TRUE(rate.check(std::nan("")).has_value());
  const KeySpec& weights = small_schema().at("b.weights");
  EXPECT_FALSE(weights.check(std::vector<double>{0, 0.5}).has_value());
  EXPECT_THAT(weights.check(std::vector<double>{0.5, 1.0}).value_or(""),
              HasSubstr("element 1 (1.0)"));
}

TEST(ConfigSchemaTest, SuggestsTyposWrongSectionsAndMissingSections) {
  const ConfigSchema& s = small_schema();
  EXPECT_EQ(s.suggest("a.cuont").value_or(""), "a.count");
  EXPECT_EQ(s.suggest("b.count").value_or(""), "a.count");
  EXPECT_EQ(s.suggest("scale").value_or(""), "b.scale");
  EXPECT_EQ(s.suggest("stpes").value_or(""), "b.steps");
  EXPECT_FALSE(s.suggest("completely.different").has_value());
}

TEST(ConfigSchemaTest, AcceptsDottedKeysAndInlineTables) {
  const Config config = small_schema().resolve_text(
      "a.count = 5\nb = { text = \"hi\", weights = [0, 0.5] }\n", "dotted.toml", {});
  EXPECT_EQ(config.get_int("a.count"), 5);
  EXPECT_EQ(config.get_string("b.text"), "hi");
  EXPECT_EQ(config.get_float_list("b.weights"), (std::vector<double>{0, 0.5}));
  EXPECT_EQ(config.where("a.count"), "dotted.toml:1");
}

TEST(ConfigSchemaTest, ReportsEveryErrorOfAFileAtOnce) {
  const std::string message = config_error_of([] {
    small_schema().resolve_text("[a]\ncount = 0\nrate = \"x\"\nmood = \"fast\"\n[c]\nx = 1\n",
                                "many.toml", {"a.mode=slwo", "b.steps"});
  });
  EXPECT_THAT(message,
              HasSubstr("many.toml:2: key 'a.count' = 0 is out of range: expected an int >= 1"));
  EXPECT_THAT(message, HasSubstr("many.toml:3: key 'a.rate' = \"x\" has the wrong type: expected a "
                                 "float in (0, 1], got a string"));
  EXPECT_THAT(message, HasSubstr("many.toml:4: unknown key 'a.mood'; did you mean 'a.mode'? (keys "
                                 "of [a]: flag, count, rate, mode)"));
  EXPECT_THAT(message, HasSubstr("many.toml:5: unknown section [c]"));
  EXPECT_THAT(message,
              HasSubstr("--set a.mode=slwo: key 'a.mode' = \"slwo\" is not an accepted "
                        "value: expected one of fast, slow, careful; did you mean \"slow\"?"));
  EXPECT_THAT(message, HasSubstr("--set 'b.steps': expected key=value"));
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 5) << message;
}

TEST(ConfigSchemaTest, CrossChecksRunOnceEveryKeyIsValidAndBlameTheLastSource) {
  const std::string message = config_error_of(
      [] { small_schema().resolve_text("[b]\nsteps = [1, 2, 3]\n", "cross.toml", {"a.count=2"}); });
  EXPECT_THAT(message, HasSubstr("--set a.count=2: b.steps has more entries than a.count"));
  EXPECT_THAT(message, HasSubstr("'a.count' = 2 from --set a.count=2"));
  EXPECT_THAT(message, HasSubstr("'b.steps' = [1, 2, 3] from cross.toml:2"));
}

TEST(ConfigSchemaTest, FloatListsAcceptIntsAndIntListsRejectFloats) {
  const Config config = small_schema().resolve_text("", "empty.toml", {"b.weights=[0, 0.5]"});
  EXPECT_EQ(config.get_float_list("b.weights"), (std::vector<double>{0, 0.5}));
  EXPECT_THAT(
      config_error_of([] { small_schema().resolve_text("", "empty.toml", {"b.steps=[1, 2.5]"}); }),
      HasSubstr("got a list containing a float"));
}

TEST(ConfigSchemaTest, TomlAndJsonRoundTripEveryType) {
  const Config config = small_schema().resolve_text(
      "[a]\nflag = false\nrate = 0.3\n[b]\ntext = \"tab\\t \\\"quoted\\\" # not a comment\"\n"
      "steps = []\n",
      "types.toml", {"b.scale=-2.5e-7", "a.mode=careful"});
  const std::string toml_text = config.to_toml();
  const Config again = small_schema().resolve_text(toml_text, "written.toml", {});
  EXPECT_TRUE(again == config) << toml_text;
  EXPECT_THAT(toml_text, HasSubstr("# A rate. (float; (0, 1])\nrate = 0.3  # types.toml:3\n"));
  EXPECT_THAT(toml_text, HasSubstr("scale = -2.5e-7  # --set b.scale=-2.5e-7\n"));
  EXPECT_THAT(toml_text, HasSubstr("count = 3\n"));  // a default has no origin comment

  const nlohmann::json json = config.to_json();
  EXPECT_EQ(json["a"]["flag"], false);
  EXPECT_EQ(json["a"]["count"], 3);
  EXPECT_EQ(json["a"]["mode"], "careful");
  EXPECT_EQ(json["b"]["steps"], nlohmann::json::array());
  EXPECT_EQ(json["b"]["weights"], nlohmann::json({0.25, 0.75}));
}

TEST(ConfigSchemaTest, TopLevelKeysAreWrittenBeforeTheFirstSection) {
  ConfigSchema schema("top-level keys");
  schema.add_int("a.x", 1, "In a section.");
  schema.add_string("name", "n", "At the top level, declared after a section.");
  const Config config = schema.resolve_text("name = \"other\"\n[a]\nx = 2\n", "top.toml", {});
  const std::string text = config.to_toml();
  EXPECT_LT(text.find("name = "), text.find("[a]")) << text;
  EXPECT_TRUE(schema.resolve_text(text, "written.toml", {}) == config) << text;
}

TEST(ConfigSchemaTest, SetValidatesProgramValues) {
  Config config = small_schema().defaults();
  config.set("a.rate", std::int64_t{1});  // an int where a float is expected
  EXPECT_EQ(config.get_float("a.rate"), 1.0);
  EXPECT_EQ(config.where("a.rate"), "program");
  EXPECT_THAT(config_error_of([&] { config.set("a.rate", 2.0); }),
              HasSubstr("program: key 'a.rate' = 2.0 is out of range"));
  EXPECT_THAT(config_error_of([&] { config.set("a.count", std::string("x")); }),
              HasSubstr("has the wrong type: expected an int >= 1, got a string"));
  EXPECT_THAT(config_error_of([&] { config.set("a.cont", std::int64_t{1}); }),
              HasSubstr("unknown key 'a.cont'; did you mean 'a.count'?"));
}

TEST(ConfigSchemaTest, SchemaMistakesAreInternalErrors) {
  ConfigSchema s("broken");
  s.add_int("x.n", 0, "Bad default.").at_least(1);
  EXPECT_THROW(s.add_int("x.n", 1, "Twice."), InternalError);
  EXPECT_THROW(s.add_int("x.n.sub", 1, "Key and section."), InternalError);
  EXPECT_THROW(s.add_int("x..y", 1, "Empty part."), InternalError);
  EXPECT_THROW(s.add_check({{"x.missing"}, [](const Config&) { return std::nullopt; }}),
               InternalError);
  EXPECT_THROW(s.defaults(), InternalError);
  const ConfigSchema& good = small_schema();
  EXPECT_THROW(good.defaults().get_int("a.rate"), InternalError);
}

TEST(ConfigSchemaTest, HelpAndMarkdownListEveryKey) {
  const std::string help = small_schema().help_text();
  const std::string markdown = small_schema().markdown();
  for (std::size_t i = 0; i < small_schema().size(); ++i) {
    const KeySpec& key = small_schema().key(i);
    EXPECT_THAT(help, HasSubstr(std::string(key.leaf()) + " = ")) << key.name();
    EXPECT_THAT(help, HasSubstr(key.doc()));
    EXPECT_THAT(markdown, HasSubstr("| `" + key.name() + "` |"));
  }
  EXPECT_THAT(help, HasSubstr("[a]\n"));
  EXPECT_THAT(help, HasSubstr("string: fast | slow | careful"));
  EXPECT_THAT(
      markdown,
      HasSubstr("| `a.mode` | string | `\"fast\"` | `fast`, `slow`, `careful` | A mode. |"));
}

}  // namespace
}  // namespace lpdt
