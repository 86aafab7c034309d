#pragma once
// Whole-file reads of the files a run keeps (checkpoint, tables, summary, config) with errors
// that name the file and the reason. A std::ifstream read through istreambuf_iterator or a JSON
// parser throws libstdc++'s own "basic_filebuf::underflow error reading the file" for a folder
// or an I/O error, naming no file; a file that may not be read looks missing to `if (!in)`.
#include <filesystem>
#include <optional>
#include <string>

namespace lpdt {

// The bytes of `path`; nullopt when nothing of that name exists (the caller says what that
// means). UserError naming the path: a folder ("is a folder, not a file"), a FIFO or device ("is
// not a regular file"), a file that cannot be opened or read (the system's reason, e.g.
// "Permission denied" or "Input/output error").
std::optional<std::string> read_file_text(const std::filesystem::path& path);

}  // namespace lpdt
