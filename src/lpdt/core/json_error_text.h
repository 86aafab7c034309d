#pragma once
// Messages of the JSON library's exceptions, for errors a user reads: without the library's
// "[json.exception.parse_error.101] parse error at " prefix, e.g.
// "line 1, column 2: syntax error while parsing object key - invalid literal; last read: '{x'".
#include <exception>
#include <string>

namespace lpdt {

std::string json_error_text(const std::exception& error);

}  // namespace lpdt
