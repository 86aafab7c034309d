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

std::vector<std::string> list_entries(const std::string& option,
                                      const std::vector<std::string>& values,
                                      const CLI::Validator& element) {
  std::vector<std::string> entries;
  for (const std::string& value : values) {
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = value.find(',', start);
      std::string entry = value.substr(start, comma == std::string::npos ? comma : comma - start);
      if (entry.empty()) {
        throw CLI::ValidationError(option, "'" + value +
                                               "' has an empty entry: expected entries "
                                               "separated by single commas");
      }
      const std::string error = element(entry);
      if (!error.empty()) throw CLI::ValidationError(option, error);
      entries.push_back(std::move(entry));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return entries;
}

}  // namespace lpdt::cli
