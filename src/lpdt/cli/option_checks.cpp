#include "lpdt/cli/option_checks.h"

#include <string>

namespace lpdt::cli {

CLI::Validator at_least(std::int64_t minimum) {
  const std::string expected = "an integer >= " + std::to_string(minimum);
  return CLI::Validator(
      [minimum, expected](std::string& value) -> std::string {
        std::int64_t parsed = 0;
        if (!CLI::detail::lexical_cast(value, parsed) || parsed < minimum) {
          return "got " + value + ": expected " + expected;
        }
        return "";
      },
      /*validator_desc=*/"");
}

}  // namespace lpdt::cli
