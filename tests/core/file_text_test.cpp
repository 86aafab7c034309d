// read_file_text: the whole file, nullopt for a missing one, and an error naming the file and
// the reason for a folder, a FIFO, a file that may not be read and one that fails to read.
#include "lpdt/core/file_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "lpdt/core/error.h"

namespace lpdt {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

fs::path fresh_dir() {
  const fs::path dir = fs::temp_directory_path() / ("lpdt-file-text-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string error_of(const fs::path& path) {
  try {
    read_file_text(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ReadFileText, ReadsEveryByteAndTellsAMissingFile) {
  const fs::path dir = fresh_dir();
  // Random bytes, NULs included, longer than one read chunk.
  std::mt19937 rng(7);
  std::string bytes(200'000, '\0');
  for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
  std::ofstream(dir / "f", std::ios::binary) << bytes;
  EXPECT_EQ(read_file_text(dir / "f"), bytes);
  std::ofstream(dir / "empty").close();
  EXPECT_EQ(read_file_text(dir / "empty"), std::string());
  EXPECT_EQ(read_file_text(dir / "missing"), std::nullopt);
  EXPECT_EQ(read_file_text(dir / "missing" / "below"), std::nullopt);
  fs::remove_all(dir);
}

TEST(ReadFileText, NamesTheFileAndTheReason) {
  const fs::path dir = fresh_dir();
  fs::create_directories(dir / "folder");
  const std::string folder = (dir / "folder").string();
  EXPECT_THAT(error_of(folder), AllOf(HasSubstr(folder + "' cannot be read"),
                                      HasSubstr("it is a folder, not a file")));
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_THAT(error_of(dir / "fifo"), HasSubstr("is not a regular file (a FIFO or a device?)"));
  // A read that fails (/proc/self/mem at offset 0 is not mapped): the system's reason.
  EXPECT_THAT(error_of("/proc/self/mem"), HasSubstr("'/proc/self/mem' cannot be read: "));
  if (geteuid() != 0) {  // root may read anything
    std::ofstream(dir / "locked") << "x";
    fs::permissions(dir / "locked", fs::perms::none);
    EXPECT_THAT(error_of(dir / "locked"), HasSubstr("Permission denied"));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lpdt
