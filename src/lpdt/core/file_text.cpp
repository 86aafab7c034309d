#include "lpdt/core/file_text.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "lpdt/core/error.h"

namespace lpdt {

std::optional<std::string> read_file_text(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  const auto cannot = [&](const std::string& why) {
    std::string message = path.string();  // (appended in steps: GCC 12 misreads a + chain here)
    message.insert(0, 1, '\'');
    message += "' cannot be read: ";
    message += why;
    return UserError(message);
  };
  // A folder on the way that may not be searched is not a missing file: give the reason.
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
    throw cannot(ec.message());
  }
  if (ec || !std::filesystem::exists(status)) return std::nullopt;
  if (std::filesystem::is_directory(status)) throw cannot("it is a folder, not a file");
  if (!std::filesystem::is_regular_file(status)) {
    throw cannot("it is not a regular file (a FIFO or a device?)");
  }
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) throw cannot(std::strerror(errno));
  std::string text;
  // Room for the whole file at once: grown chunk by chunk, a large file (a 723 MiB checkpoint)
  // was copied at every doubling and held up to 1.5 times its size during the read. The size is
  // a hint only: a file that grows meanwhile is read whole all the same.
  std::error_code size_error;
  const std::uintmax_t size = std::filesystem::file_size(path, size_error);
  if (!size_error) text.reserve(static_cast<std::size_t>(size));
  char chunk[1 << 16];
  std::size_t got = 0;
  while ((got = std::fread(chunk, 1, sizeof(chunk), file)) > 0) text.append(chunk, got);
  const bool failed = std::ferror(file) != 0;
  const int error_number = errno;
  std::fclose(file);
  if (failed) throw cannot(error_number != 0 ? std::strerror(error_number) : "read error");
  return text;
}

}  // namespace lpdt
