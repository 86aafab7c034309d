#pragma once
// Messages of toml++'s parse errors, for errors a user reads.
//
// toml++ 3.x (as Debian ships it) garbles the key it names when a key or table is defined twice
// and the key is quoted: `"epochs" = 2` after `"epochs" = 1` reads "cannot redefine existing
// integer '"epepochs" '". The key is rewritten here as the file spells it on the error's line.
// This header needs no toml++: callers pass the error's description and line.
#include <cstdint>
#include <string>
#include <string_view>

namespace lpdt {

// `description`: the parse error's description; `source_text`: the whole TOML text parsed;
// `line`: the error's 1-based line. Returns the description, its redefined key as written.
std::string toml_error_text(std::string_view description, std::string_view source_text,
                            std::uint32_t line);

}  // namespace lpdt
