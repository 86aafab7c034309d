#pragma once
// Whole-file reads for the dataset readers, plain or gzip-compressed.
#include <cstdint>
#include <string>
#include <vector>

namespace lpdt::data {

// True when the first two bytes of `path` are the gzip magic 1f 8b (RFC 1952, 2.3.1).
bool is_gzip_file(const std::string& path);

// The bytes of `path`, decompressed when the file starts with the gzip magic. `what` (e.g.
// "fashion-mnist") prefixes every error message, which also names the file: a missing or
// unreadable file and a corrupt gzip stream are UserErrors.
std::vector<std::uint8_t> read_file_bytes(const std::string& path, const std::string& what);

// `path` if it exists, else `path + ".gz"` if that exists, else "". A path whose folder may not
// be searched is returned as it is, so that reading it names the system's reason.
std::string find_plain_or_gz(const std::string& path);

}  // namespace lpdt::data
