// The run folder's file primitives (exp/run_folder.h): new folders never reuse an old one, and
// atomic writes of one path by concurrent writers (sweep shards writing the same tables) each
// publish a whole file.
#include "lpdt/exp/run_folder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>
#include <vector>

#include "lpdt/core/error.h"

namespace lpdt::exp {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("lpdt_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A run folder held by one trainer cannot be taken by another (another open of the lock file
// is another holder, as another process's would be), and is free again once the holder ends.
TEST(RunFolder, ALockedFolderIsRefusedToASecondHolder) {
  const fs::path dir = fresh_dir("lock");
  EXPECT_FALSE(run_folder_in_use(dir));
  {
    RunFolderLock first(dir);
    EXPECT_TRUE(run_folder_in_use(dir));
    try {
      RunFolderLock second(dir);
      ADD_FAILURE() << "a second holder was let in";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("'" + dir.string() + "' is being trained by another "
                                           "process"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_FALSE(run_folder_in_use(dir));
  RunFolderLock again(dir);
  fs::remove_all(dir);
}

// report --out and the like replace their own earlier output only: an existing file of another
// kind is refused and left as it was; a missing file or an earlier page passes.
TEST(RunFolder, AnOutputReplacesOnlyItsOwnKind) {
  const fs::path dir = fresh_dir("own_output");
  const std::string summary = (dir / "summary.json").string(), page = (dir / "r.html").string();
  std::ofstream(summary) << "{\"final\": {}}";
  std::ofstream(page) << "<!DOCTYPE html>\n<html></html>";
  EXPECT_NO_THROW(check_replaces_only_own_output(page, "report --out", "<!DOCTYPE html", "a page"));
  EXPECT_NO_THROW(check_replaces_only_own_output((dir / "new.html").string(), "report --out",
                                                 "<!DOCTYPE html", "a page"));
  try {
    check_replaces_only_own_output(summary, "report --out", "<!DOCTYPE html", "an HTML page");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("report --out " + summary +
                                         ": the file exists and is not an HTML page"),
              std::string::npos)
        << e.what();
  }
  std::ifstream in(summary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "{\"final\": {}}");
  fs::remove_all(dir);
}

// bench --json and cost --json replace their own earlier JSON only: a config file, a summary,
// a JSON without their keys or a file that is not JSON is refused and left as it was.
TEST(RunFolder, AJsonOutputReplacesOnlyItsOwnKind) {
  const fs::path dir = fresh_dir("own_json");
  const std::vector<std::string> keys = {"rows", "build"};
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream((dir / name).string()) << text;
    return (dir / name).string();
  };
  const std::string earlier = write("b.json", R"({"rows": [], "build": {}, "date": "x"})");
  const std::string empty = write("empty.json", "");
  EXPECT_NO_THROW(check_replaces_only_own_json(earlier, "bench --json", keys, "a result"));
  EXPECT_NO_THROW(check_replaces_only_own_json(empty, "bench --json", keys, "a result"));
  EXPECT_NO_THROW(
      check_replaces_only_own_json((dir / "new.json").string(), "bench --json", keys, "a result"));
  for (const auto& [name, text] :
       std::vector<std::pair<std::string, std::string>>{{"summary.json", R"({"final": {}})"},
                                                        {"partial.json", R"({"rows": []})"},
                                                        {"list.json", R"([{"rows": 1}])"},
                                                        {"config.toml", "[run]\nepochs = 3\n"}}) {
    const std::string path = write(name, text);
    try {
      check_replaces_only_own_json(path, "bench --json", keys, "an earlier lpdt bench result");
      ADD_FAILURE() << name << ": no error";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("bench --json " + path +
                                           ": the file exists and is not an earlier lpdt bench "
                                           "result"),
                std::string::npos)
          << e.what();
    }
    std::ifstream in(path);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), text) << name;
  }
  fs::remove_all(dir);
}

TEST(RunFolder, EveryCallCreatesANewFolder) {
  const fs::path dir = fresh_dir("run_folders");
  std::set<fs::path> made;
  for (int i = 0; i < 5; ++i) made.insert(create_run_folder(dir.string(), "same-name"));
  EXPECT_EQ(made.size(), 5u);
  for (const auto& folder : made) EXPECT_TRUE(fs::is_directory(folder));
  fs::remove_all(dir);
}

// A file (not a folder) with the name the next run folder would take is passed over like a
// folder of that name, not an error ("File exists"), and is left as it was.
TEST(RunFolder, AFileWithTheNextNameIsPassedOver) {
  const fs::path dir = fresh_dir("file_in_the_way");
  const fs::path first = create_run_folder(dir.string(), "run");
  // The names of this second and the next few: whichever the next call's clock reads.
  const std::string stamp = first.filename().string().substr(std::string("run-").size(), 15);
  fs::remove(first);
  std::set<fs::path> files;
  std::tm utc{};
  ASSERT_NE(strptime(stamp.c_str(), "%Y%m%d-%H%M%S", &utc), nullptr);
  const std::time_t base = timegm(&utc);
  for (std::time_t t = base; t < base + 5; ++t) {
    std::tm at{};
    gmtime_r(&t, &at);
    char name[32];
    std::strftime(name, sizeof name, "run-%Y%m%d-%H%M%S", &at);
    std::ofstream(dir / name) << "a user's file";
    files.insert(dir / name);
  }
  const fs::path made = create_run_folder(dir.string(), "run");
  EXPECT_TRUE(fs::is_directory(made)) << made;
  EXPECT_EQ(files.count(made), 0u) << made;
  for (const fs::path& file : files) {
    std::ifstream in(file);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "a user's file") << file;
  }
  fs::remove_all(dir);
}

// Two shards of a sweep used to share the temporary name "<path>.tmp": one renamed the other's
// file away and failed with "cannot rename". Each writer now has its own; every write succeeds,
// the file is always one writer's whole text, and no temporary file is left behind.
TEST(RunFolder, ConcurrentWritesOfOnePathEachPublishAWholeFile) {
  const fs::path dir = fresh_dir("concurrent_writes");
  const fs::path path = dir / "table.md";
  constexpr int kWriters = 4, kWrites = 200;
  std::vector<std::string> texts;
  for (int w = 0; w < kWriters; ++w) texts.push_back(std::string(10000 + w, 'a' + w) + "\n");
  std::vector<std::thread> writers;
  std::vector<int> failures(kWriters, 0);
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < kWrites; ++i) {
        try {
          write_text_file(path, texts[w]);
        } catch (const std::exception&) {
          ++failures[w];
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  for (int w = 0; w < kWriters; ++w) EXPECT_EQ(failures[w], 0) << "writer " << w;
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(std::find(texts.begin(), texts.end(), text), texts.end()) << "a torn file";
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "table.md");
  }
  EXPECT_EQ(files, 1);
  fs::remove_all(dir);
}

// A path that cannot be written is named, with the reason, and nothing is left behind.
TEST(RunFolder, UnwritablePathsNameThePathAndTheReason) {
  const fs::path dir = fresh_dir("unwritable");
  std::ofstream(dir / "plain") << "x";
  fs::create_directories(dir / "folder");
  const auto error_of = [](const fs::path& path) -> std::string {
    try {
      write_text_file(path, "text");
    } catch (const UserError& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(error_of(dir / "missing" / "a.txt"),
            "cannot write '" + (dir / "missing" / "a.txt").string() + "': its folder '" +
                (dir / "missing").string() + "' does not exist");
  EXPECT_EQ(error_of(dir / "plain" / "a.txt"),
            "cannot write '" + (dir / "plain" / "a.txt").string() + "': '" +
                (dir / "plain").string() + "' is a file, not a folder");
  EXPECT_EQ(error_of(dir / "folder"),
            "cannot write '" + (dir / "folder").string() + "': it is a folder");
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_TRUE(entry.path().filename() == "plain" || entry.path().filename() == "folder")
        << entry.path();
  }
  EXPECT_EQ(files, 2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lpdt::exp

namespace lpdt::exp {
namespace {

// A path that is a link, or a device behind one, is written through: the link stays a link and
// the device a device (a rename over them would replace either with a plain file), and a device
// that refuses the bytes (/dev/full) is an error, not "wrote".
TEST(RunFolder, LinksAndDevicesAreWrittenThroughNotReplaced) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("lpdt_write_through_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path target = dir / "target.json", link = dir / "link.json";
  std::ofstream(target) << "old";
  fs::create_symlink(target, link);
  write_text_file(link, "new");
  EXPECT_TRUE(fs::is_symlink(link));
  std::ifstream in(target);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "new");

  const fs::path to_null = dir / "null";
  fs::create_symlink("/dev/null", to_null);
  write_text_file(to_null, "discarded");
  EXPECT_TRUE(fs::is_symlink(to_null));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));

  if (fs::is_character_file("/dev/full")) {
    const fs::path to_full = dir / "full";
    fs::create_symlink("/dev/full", to_full);
    try {
      write_text_file(to_full, "bytes");
      ADD_FAILURE() << "a write to /dev/full succeeded";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("No space left"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(fs::is_character_file("/dev/full"));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lpdt::exp
