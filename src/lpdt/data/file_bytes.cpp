#include "lpdt/data/file_bytes.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "lpdt/core/error.h"

namespace lpdt::data {
namespace {

constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

[[noreturn]] void fail(const std::string& what, const std::string& path, const std::string& why) {
  throw UserError(what + ": " + path + ": " + why);
}

void check_regular_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  // A folder that may not be searched (mode 000) is not a missing file: give the system's reason.
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
    fail(what, path, "cannot open: " + ec.message());
  }
  if (ec || !std::filesystem::exists(status)) fail(what, path, "no such file");
  if (std::filesystem::is_directory(status)) fail(what, path, "is a directory, expected a file");
  // A FIFO or a device would block the read or never end: only a plain file has data to load.
  if (!std::filesystem::is_regular_file(status)) {
    fail(what, path, "is not a regular file (a FIFO or a device?), expected a file");
  }
}

// zlib's gzerror text is "<path>: <reason>"; the caller's message names the path already.
std::string gzip_reason(gzFile file, const std::string& path, int* code) {
  std::string message = gzerror(file, code);
  if (message.starts_with(path + ": ")) message.erase(0, path.size() + 2);
  return message;
}

std::vector<std::uint8_t> read_gzip(const std::string& path, const std::string& what) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) fail(what, path, std::string("cannot open: ") + std::strerror(errno));
  std::vector<std::uint8_t> bytes;
  while (true) {
    const std::size_t old_size = bytes.size();
    bytes.resize(old_size + kChunkBytes);
    const int got = gzread(file, bytes.data() + old_size, static_cast<unsigned>(kChunkBytes));
    if (got < 0) {
      int code = 0;
      const std::string message = gzip_reason(file, path, &code);
      gzclose(file);
      fail(what, path, "corrupt gzip stream: " + message);
    }
    bytes.resize(old_size + static_cast<std::size_t>(got));
    if (got == 0) break;
  }
  // zlib reports a stream cut short only through gzerror (Z_BUF_ERROR) once reading stops.
  int code = Z_OK;
  const std::string message = gzip_reason(file, path, &code);
  gzclose(file);
  if (code != Z_OK && code != Z_STREAM_END) fail(what, path, "corrupt gzip stream: " + message);
  bytes.shrink_to_fit();
  return bytes;
}

std::vector<std::uint8_t> read_plain(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(what, path, "is a folder, not a file");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(what, path, std::string("cannot open: ") + std::strerror(errno));
  const std::streamoff size = in.tellg();
  if (size < 0) fail(what, path, "cannot determine the file size");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  in.seekg(0);
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), size)) {
    fail(what, path, "read error");
  }
  return bytes;
}

}  // namespace

bool is_gzip_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char magic[2] = {0, 0};
  if (!in.read(reinterpret_cast<char*>(magic), 2)) return false;
  return magic[0] == 0x1f && magic[1] == 0x8b;
}

std::vector<std::uint8_t> read_file_bytes(const std::string& path, const std::string& what) {
  check_regular_file(path, what);
  return is_gzip_file(path) ? read_gzip(path, what) : read_plain(path, what);
}

std::string find_plain_or_gz(const std::string& path) {
  for (const std::string& candidate : {path, path + ".gz"}) {
    std::error_code ec;
    const auto status = std::filesystem::status(candidate, ec);
    // A folder, a FIFO or a device of that name: reading it names what it is.
    if (!ec && std::filesystem::exists(status)) return candidate;
    // Not a missing file (a folder that may not be searched): reading it names the reason.
    if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
      return candidate;
    }
  }
  return "";
}

}  // namespace lpdt::data
