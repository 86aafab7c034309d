#pragma once
// A string written into a JSON document or a TOML file as one double-quoted literal. The escapes
// below are the subset the two formats share, so one function serves the graph exports (JSON)
// and the commented configuration `lpdt config` writes (TOML basic strings).
#include <string>
#include <string_view>

namespace lpdt {

// `text` between double quotes: `"` and `\` escaped, tab, newline and carriage return as \t \n
// \r, every other control byte and DEL as \u00XX; all other bytes (UTF-8 included) as they are.
std::string double_quoted_literal(std::string_view text);

}  // namespace lpdt
