#include "lpdt/cli/option_checks.h"

#include <charconv>
#include <string>

namespace lpdt::cli {
namespace {

// The whole text as a T, or false (not a number, trailing characters, or beyond T's range).
template <typename T>
bool parse_exactly(const std::string& text, T& value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end && !text.empty();
}

}  // namespace

CLI::Validator integer_in(std::int64_t minimum, std::int64_t maximum) {
  const std::string expected =
      maximum == std::numeric_limits<std::int64_t>::max()
          ? "an integer >= " + std::to_string(minimum)
          : "an integer from " + std::to_string(minimum) + " to " + std::to_string(maximum);
  return CLI::Validator(
      [minimum, maximum, expected](std::string& value) -> std::string {
        std::int64_t parsed = 0;
        if (!parse_exactly(value, parsed) || parsed < minimum || parsed > maximum) {
          return "got " + value + ": expected " + expected;
        }
        return "";
      },
      /*validator_desc=*/"");
}

CLI::Validator at_least(std::int64_t minimum) { return integer_in(minimum); }

CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        std::uint64_t parsed = 0;
        if (!parse_exactly(value, parsed)) {
          return "got " + value + ": expected an integer from 0 to " +
                 std::to_string(std::numeric_limits<std::uint64_t>::max());
        }
        return "";
      },
      /*validator_desc=*/"");
}

CLI::Validator non_empty_path() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        return value.empty() ? "got an empty name: expected a file or folder name" : "";
      },
      /*validator_desc=*/"");
}

}  // namespace lpdt::cli
