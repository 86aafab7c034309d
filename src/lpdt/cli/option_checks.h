#pragma once
// Checks of command-line values shared by the subcommands. Each reads the whole text exactly
// (std::from_chars): a number beyond the option's type is refused, never saturated.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>

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

}  // namespace lpdt::cli
