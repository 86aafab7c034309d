#include "lpdt/exp/run_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lpdt/core/error.h"

namespace lpdt::exp {

std::filesystem::path create_run_folder(const std::string& out_dir, const std::string& name) {
  namespace fs = std::filesystem;
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) {
    throw ConfigError("run.out_dir = '" + out_dir + "': cannot create the folder: " + ec.message());
  }
  const std::string base = name + "-" + stamp;
  for (int suffix = 0; suffix < 1000; ++suffix) {
    const fs::path candidate =
        fs::path(out_dir) / (suffix == 0 ? base : base + "-" + std::to_string(suffix));
    // create_directory is atomic: false when the folder already exists.
    if (fs::create_directory(candidate, ec)) return candidate;
    // A file of that name (not a folder) takes the name as a folder would: the next suffix.
    if (ec == std::errc::file_exists) continue;
    if (ec) {
      throw UserError("cannot create run folder '" + candidate.string() + "': " + ec.message());
    }
  }
  throw UserError("cannot find a free run folder name for '" + base + "' in '" + out_dir + "'");
}

void check_output_file(const std::string& path, const std::string& option) {
  if (path.empty()) return;
  std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (folder.empty()) folder = ".";
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec)) {
    throw ConfigError(option + " " + path + ": " + why_cannot_write(path, 0) +
                      ": create the folder first or write elsewhere");
  }
  if (std::filesystem::is_directory(path, ec)) {
    throw ConfigError(option + " " + path + ": it is a folder: name a file in it");
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    throw ConfigError(option + " " + path + ": the folder '" + folder.string() +
                      "' is not writable");
  }
}

namespace {
constexpr const char* kRunFolderLockFile = ".lpdt-lock";
}  // namespace

RunFolderLock::RunFolderLock(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / kRunFolderLockFile;
  // Where the lock cannot be taken at all (a read-only folder, whose writes then fail with their
  // own errors; a file system without flock), the run goes on unlocked: only another holder
  // stops it.
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return;
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    if (error == EWOULDBLOCK) {
      throw UserError("run folder '" + dir.string() +
                      "' is being trained by another process right now (it holds " +
                      file.string() + "): let that one finish, or stop it first");
    }
  }
}

RunFolderLock::~RunFolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

bool run_folder_in_use(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / kRunFolderLockFile;
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // never locked (or unreadable: then nobody could lock it either)
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return held;
}

void check_replaces_only_own_output(const std::string& path, const std::string& option,
                                    const std::string& signature, const std::string& kind) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::is_regular_file(path, ec)) return;
  std::ifstream in(path, std::ios::binary);
  std::string start(signature.size(), '\0');
  in.read(start.data(), static_cast<std::streamsize>(start.size()));
  start.resize(static_cast<std::size_t>(in.gcount()));
  if (start == signature) return;
  throw ConfigError(option + " " + path + ": the file exists and is not " + kind +
                    ", so writing it would destroy it: name a new file, or move this one away "
                    "first");
}

void check_replaces_only_own_json(const std::string& path, const std::string& option,
                                  const std::vector<std::string>& keys, const std::string& kind) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::is_regular_file(path, ec)) return;
  if (std::filesystem::file_size(path, ec) == 0 && !ec) return;  // nothing to lose
  std::ifstream in(path, std::ios::binary);
  const nlohmann::json existing = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  bool own = existing.is_object();
  for (const std::string& key : keys) own = own && existing.contains(key);
  if (own) return;
  throw ConfigError(option + " " + path + ": the file exists and is not " + kind +
                    ", so writing it would destroy it: name a new file, or move this one away "
                    "first");
}

std::string why_cannot_write(const std::filesystem::path& path, int error_number) {
  std::filesystem::path folder = path.parent_path();
  if (folder.empty()) folder = ".";
  std::error_code ec;
  if (!std::filesystem::exists(folder, ec)) {
    return "its folder '" + folder.string() + "' does not exist";
  }
  if (!std::filesystem::is_directory(folder, ec)) {
    std::string message = folder.string();  // (appended in steps: GCC 12 misreads a + chain here)
    message.insert(0, 1, '\'');
    message += "' is a file, not a folder";
    return message;
  }
  if (std::filesystem::is_directory(path, ec)) return "it is a folder";
  return error_number != 0 ? std::strerror(error_number) : "unknown reason";
}

namespace {

// Writes straight into an existing file that is not a regular one (/dev/stdout, a FIFO, a
// device): a rename over it would replace the device or link with a plain file.
void write_in_place(const std::filesystem::path& path, const std::string& text) {
  errno = 0;
  std::ofstream out(path, std::ios::binary);
  if (!out) throw UserError("cannot write '" + path.string() + "': " + why_cannot_write(path, errno));
  out << text;
  out.flush();
  if (!out) {
    const int error_number = errno;
    throw UserError("cannot write '" + path.string() +
                    "': " + (error_number != 0 ? std::strerror(error_number) : "disk full?"));
  }
}

}  // namespace

void write_text_file(const std::filesystem::path& given, const std::string& text) {
  std::error_code status_error;
  const auto status = std::filesystem::status(given, status_error);  // follows links
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status) &&
      !std::filesystem::is_directory(status)) {
    write_in_place(given, text);
    return;
  }
  // A link to a regular file: the file is replaced, the link stays.
  std::filesystem::path path = given;
  if (std::filesystem::is_symlink(std::filesystem::symlink_status(given, status_error)) &&
      std::filesystem::is_regular_file(status)) {
    path = std::filesystem::canonical(given, status_error);
    if (status_error) path = given;
  }
  // A temporary name of this writer's own: processes (sweep shards writing the same tables) and
  // threads never share one, so each rename publishes a whole file and the last one stands.
  static std::atomic<unsigned long> writes{0};
  const std::filesystem::path tmp = path.string() + ".tmp." + std::to_string(::getpid()) + "." +
                                    std::to_string(writes.fetch_add(1));
  {
    errno = 0;
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw UserError("cannot write '" + path.string() + "': " + why_cannot_write(path, errno));
    }
    out << text;
    out.flush();
    if (!out) {
      const int error_number = errno;
      std::error_code ignored;
      out.close();
      std::filesystem::remove(tmp, ignored);
      throw UserError("cannot write '" + path.string() +
                      "': " + (error_number != 0 ? std::strerror(error_number) : "disk full?"));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw UserError(
        "cannot write '" + path.string() +
        "': " + (std::filesystem::is_directory(path, ignored) ? "it is a folder" : ec.message()));
  }
}

}  // namespace lpdt::exp
