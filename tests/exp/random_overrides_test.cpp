// Seeded random `--set` overrides drawn from the experiment schema: extreme numbers, wrong
// types, empty and odd strings, lists, every choice of an enum and the bounds of every range.
// Each set of overrides resolves, or is refused with a ConfigError; never another exception (an
// internal error of a key's later use, a number conversion's std::out_of_range). A configuration
// that resolves writes itself as TOML that resolves again to the same TOML. The trials are
// multiplied by LPDT_DAMAGE_TRIAL_FACTOR (tests/lib/byte_mutations.h) for a longer search.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "lib/byte_mutations.h"
#include "lpdt/core/error.h"
#include "lpdt/exp/config_schema.h"
#include "lpdt/exp/experiment_config.h"

namespace lpdt::exp {
namespace {

// Value texts any key may be given: TOML's edge cases and the wrong type for most keys.
const std::vector<std::string>& tricky_values() {
  static const std::vector<std::string> values = {"0",
                                                  "1",
                                                  "-1",
                                                  "2",
                                                  "7",
                                                  "64",
                                                  "1000000",
                                                  "9223372036854775807",
                                                  "-9223372036854775808",
                                                  "9223372036854775808",
                                                  "1e308",
                                                  "-1e308",
                                                  "1e400",
                                                  "5e-324",
                                                  "nan",
                                                  "inf",
                                                  "-inf",
                                                  "0.5",
                                                  "-0.0",
                                                  "1.5",
                                                  "true",
                                                  "false",
                                                  "\"\"",
                                                  "\"x\"",
                                                  "\"\\u0000\"",
                                                  "\"\\t\"",
                                                  "[]",
                                                  "[0]",
                                                  "[1, 2]",
                                                  "[-1, 3]",
                                                  "[0.5, 1e300]",
                                                  "[1, \"a\"]",
                                                  "{}",
                                                  "\"" + std::string(300, 'a') + "\"",
                                                  "'literal'",
                                                  "\"unterminated",
                                                  "1_000",
                                                  "0x10",
                                                  "2026-11-29"};
  return values;
}

// A value text for `key`: one of the tricky values, one of its choices, a value at or just past
// one end of its range, or its default.
std::string value_for(const KeySpec& key, std::mt19937_64& rng) {
  switch (rng() % 5) {
    case 0:
      if (!key.choices().empty()) return "\"" + key.choices()[rng() % key.choices().size()] + "\"";
      break;
    case 1:
    case 2: {
      const std::optional<ConfigBound>& bound = rng() % 2 ? key.min() : key.max();
      if (bound) {
        const double nudge = std::array<double, 4>{0.0, 1.0, -1.0, 1e-9}[rng() % 4];
        const double value = bound->value + nudge;
        if (key.type() == ConfigType::kInt || key.type() == ConfigType::kIntList) {
          const std::string text = std::to_string(static_cast<long long>(std::llround(value)));
          return key.type() == ConfigType::kInt ? text : "[" + text + "]";
        }
        char text[64];
        std::snprintf(text, sizeof(text), "%.17g", value);
        if (std::string(text).find_first_of(".e") == std::string::npos) std::strcat(text, ".0");
        if (key.type() != ConfigType::kFloatList) return text;
        std::string list = "[";  // (in steps: GCC 12 misreads `"[" + std::string(text)`)
        list += text;
        list += "]";
        return list;
      }
      break;
    }
    case 3:
      return format_config_value(key.default_value());
    default:
      break;
  }
  return tricky_values()[rng() % tricky_values().size()];
}

TEST(RandomOverrides, ResolveOrAreConfigErrorsAndResolvedOnesRoundTrip) {
  const ConfigSchema& schema = experiment_schema();
  const std::filesystem::path toml_path =
      std::filesystem::temp_directory_path() /
      ("lpdt_random_overrides_" + std::to_string(::getpid()) + ".toml");
  std::mt19937_64 rng(20261129);
  constexpr int kTrials = 3000;
  int resolved = 0;
  int refused = 0;
  const int trials = kTrials * mutation_testing::trial_factor();
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<std::string> overrides;
    const int count = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < count; ++i) {
      const KeySpec& key = schema.key(rng() % schema.size());
      overrides.push_back(key.name() + "=" + value_for(key, rng));
    }
    std::string shown;
    for (const std::string& o : overrides) shown += " --set " + printable(o);
    try {
      const ExperimentConfig config = load_experiment_config(std::nullopt, overrides);
      ++resolved;
      const std::string toml = to_toml(config);
      std::ofstream(toml_path, std::ios::trunc) << toml;
      EXPECT_EQ(to_toml(load_experiment_config(toml_path.string(), {})), toml)
          << "trial " << trial << ":" << shown;
    } catch (const ConfigError& e) {
      ++refused;
      const std::string message = e.what();
      EXPECT_EQ(printable_lines(message), message) << "trial " << trial << ":" << shown;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "trial " << trial << ":" << shown << ": not a ConfigError: " << e.what();
    }
    if (::testing::Test::HasFailure()) break;
  }
  std::filesystem::remove(toml_path);
  // Both outcomes are common: the draws reach the checks and get past them.
  EXPECT_GT(resolved, trials / 20);
  EXPECT_GT(refused, trials / 4);
}

}  // namespace
}  // namespace lpdt::exp
