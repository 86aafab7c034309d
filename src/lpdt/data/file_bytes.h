#pragma once
// Whole-file reads for the dataset readers, plain or gzip-compressed.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace lpdt::data {

// True when the first two bytes of `path` are the gzip magic 1f 8b (RFC 1952, 2.3.1).
bool is_gzip_file(const std::string& path);

// The most bytes a dataset file may hold (decompressed): half of this machine's physical memory.
// A reader keeps the file's bytes and the tensor it fills from them at once, so a larger file
// cannot load here; a gzip file that inflates past it is corrupt or a wrong file (a few megabytes
// of zeros inflate to gigabytes), and stopping there keeps the kernel's out-of-memory killer,
// which would end the process without a word, out of it.
std::uint64_t loadable_file_bytes();

// The bytes of `path`, decompressed when the file starts with the gzip magic. `what` (e.g.
// "fashion-mnist") prefixes every error message, which also names the file: a missing or
// unreadable file, a corrupt gzip stream, bytes after the gzip stream that are not gzip, a gzip
// stream that decompresses to more than most_bytes (stopped there; most_reason, e.g. "the size
// its header gives (...)", ends the message), and a file of more than loadable_file_bytes() (a
// gzip stream: decompressed; checked before a plain file is read) are UserErrors.
std::vector<std::uint8_t> read_file_bytes(
    const std::string& path, const std::string& what,
    std::uint64_t most_bytes = std::numeric_limits<std::uint64_t>::max(),
    const std::string& most_reason = "");

// The first `count` bytes of `path` (fewer when it is shorter), decompressed when the file is
// gzip: a header, read without inflating the rest. Errors as read_file_bytes.
std::vector<std::uint8_t> read_file_head(const std::string& path, const std::string& what,
                                         std::size_t count);

// `path` if it exists, else `path + ".gz"` if that exists, else "". A path whose folder may not
// be searched is returned as it is, so that reading it names the system's reason.
std::string find_plain_or_gz(const std::string& path);

}  // namespace lpdt::data
