#pragma once
// Messages of the JSON library's exceptions, for errors a user reads: without the library's
// "[json.exception.parse_error.101] parse error at " prefix, e.g.
// "line 1, column 2: syntax error while parsing object key - invalid literal; last read: '{x'".
#include <cstddef>
#include <exception>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace lpdt {

std::string json_error_text(const std::exception& error);

// A JSON value, as read from a user's file, for an error message: its JSON text cut to about
// `max_chars` characters ("..." marks a cut), e.g. `[1,2,[3,...`. Nesting deeper than a few
// levels is written "...": a hostile value nested 100,000 deep, which `dump()` would recurse
// through to the end of the stack, costs a few frames.
std::string json_excerpt(const nlohmann::json& value, std::size_t max_chars = 60);

}  // namespace lpdt
