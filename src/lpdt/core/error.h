#pragma once
// Two kinds of failure (docs/architecture.md, "Errors"):
//  - UserError: bad config, bad file, bad argument. The message names the value and what was
//    expected. `main` maps ConfigError to exit code 2 and every other UserError to 1.
//  - a broken invariant: LPDT_CHECK, an internal assertion (exit code 1, "internal error").
// Nothing in the library calls exit or abort.
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace lpdt {

// A problem the user can fix: a bad file, a bad argument at run time.
class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bad configuration or command line (exit code 2).
class ConfigError : public UserError {
 public:
  using UserError::UserError;
};

// A problem every process of a multi-process job stops with alike (a verdict agreed over MPI,
// exit code 1): rank 0 alone reports it, and no process needs to stop the others.
class JobWideError : public UserError {
 public:
  using UserError::UserError;
};

// A broken internal invariant: a bug in lpdt, never the user's fault.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Text from a user's file, fit to quote in a message: control bytes (a carriage return, an
// escape sequence) and bytes that are not well-formed UTF-8 (binary garbage) as \xNN, so a
// message never moves the cursor, recolours the terminal or prints mojibake; UTF-8 characters
// stay as they are.
std::string printable(std::string_view text);
// The same for a part of a file that may be long (a line of a damaged table): at most
// most_bytes of it, then "... (N bytes)".
std::string printable_excerpt(std::string_view text, std::size_t most_bytes = 80);
// `printable` line by line: the line breaks of a message of several lines kept. What `lpdt`
// prints of an error, so that text a library quotes from a damaged file raw reaches the
// terminal escaped too.
std::string printable_lines(std::string_view text);
// The offset of the first byte of `text` that is not part of well-formed UTF-8 (as `printable`
// judges it), or nullopt: JSON and TOML text must be UTF-8.
std::optional<std::size_t> first_invalid_utf8_byte(std::string_view text);

[[noreturn]] void fail_internal(const char* condition, const char* file, int line,
                                const std::string& message);

}  // namespace lpdt

#define LPDT_CHECK(cond, msg)                                             \
  do {                                                                    \
    if (!(cond)) ::lpdt::fail_internal(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
