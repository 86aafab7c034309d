#pragma once
// Checks of command-line values shared by the subcommands. Each reads the whole text exactly
// (std::from_chars): a number beyond the option's type is refused, never saturated.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace lpdt::cli {

// An integer in [minimum, maximum]; anything else is refused before the command runs:
// "--channels: got 0: expected an integer >= 1" (or "from 0 to 1024" with a maximum).
CLI::Validator integer_in(std::int64_t minimum,
                          std::int64_t maximum = std::numeric_limits<std::int64_t>::max());
// An integer of at least `minimum`.
CLI::Validator at_least(std::int64_t minimum);
// A 64-bit seed: an integer from 0 to 2^64 - 1.
CLI::Validator seed_value();
// A file or folder name that is not empty: an empty value (`--json ''`, an unset shell
// variable) would otherwise read as the option not given and write nothing, or the default.
CLI::Validator non_empty_path();

// The entries of a comma-separated list option's values ("1,8,64", or the option repeated), each
// checked by `element`. A CLI::ValidationError (exit code 2) names the option and the value for
// an entry that fails `element`, and for an empty one: CLI11's own delimiter drops empty entries,
// so "1,,8" would silently read as 1,8.
std::vector<std::string> list_entries(const std::string& option,
                                      const std::vector<std::string>& values,
                                      const CLI::Validator& element);

// A list option read through list_entries into `values` (which holds the default until given).
template <typename T>
CLI::Option* add_list_option(CLI::App* cmd, const std::string& option, std::vector<T>& values,
                             const std::string& description,
                             const CLI::Validator& element = CLI::Validator()) {
  std::string shown;
  for (const T& value : values) {
    shown += (shown.empty() ? "" : ",") + CLI::detail::to_string(value);
  }
  return cmd
      ->add_option_function<std::vector<std::string>>(
          option,
          [&values, option, element](const std::vector<std::string>& given) {
            values.clear();
            for (const std::string& entry : list_entries(option, given, element)) {
              T value{};
              if (!CLI::detail::lexical_cast(entry, value)) {
                throw CLI::ConversionError(entry, option);
              }
              values.push_back(value);
            }
          },
          description)
      ->type_name(CLI::detail::type_name<T>())
      ->default_str(shown);
}

}  // namespace lpdt::cli
