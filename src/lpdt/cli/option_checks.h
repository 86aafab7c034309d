#pragma once
// Checks of command-line values shared by the subcommands.
#include <CLI/CLI.hpp>
#include <cstdint>

namespace lpdt::cli {

// An integer option of at least `minimum`; anything else is refused before the command runs:
// "--channels: got 0: expected an integer >= 1".
CLI::Validator at_least(std::int64_t minimum);

}  // namespace lpdt::cli
