// What a benchmark's JSON records of its build, machine and date (exp/bench_record.h).
#include "lpdt/exp/bench_record.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "lpdt/build_info.h"
#include "lpdt/core/error.h"

namespace lpdt::exp {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("lpdt_bench_record_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

RuntimeInfo some_runtime() {
  RuntimeInfo runtime;
  runtime.intra_op_threads = 3;
  runtime.cpu_kernels = "avx2";
  return runtime;
}

TEST(BenchRecord, TimestampIsIso8601Utc) {
  EXPECT_TRUE(std::regex_match(utc_timestamp(),
                               std::regex("20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:"
                                          "[0-6][0-9]Z")))
      << utc_timestamp();
}

TEST(BenchRecord, JsonKeepsTheResultsAndAddsBuildMachineAndDate) {
  const fs::path path = fresh_dir("write") / "b.json";
  nlohmann::json results;
  results["rows"] = {{{"nodes", 8}, {"step_ms", 12.5}}};
  write_bench_json(path.string(), results, some_runtime(), "bench");
  std::ifstream in(path);
  const nlohmann::json written = nlohmann::json::parse(in);
  EXPECT_EQ(written["rows"], results["rows"]);
  EXPECT_EQ(written["build"]["git_revision"], build_info::kGitRevision);
  EXPECT_EQ(written["build"]["compiler"], build_info::kCompiler);
  EXPECT_EQ(written["machine"]["cpu"], cpu_model_name());
  EXPECT_EQ(written["machine"]["intra_op_threads"], 3);
  EXPECT_EQ(written["machine"]["cpu_kernels"], "avx2");
  EXPECT_EQ(written["machine"]["runtime"], some_runtime().description());
  EXPECT_EQ(written["date"].get<std::string>().size(), std::string("2026-01-02T03:04:05Z").size());
  // Published by rename: no temporary file is left next to it.
  EXPECT_EQ(std::distance(fs::directory_iterator(path.parent_path()), fs::directory_iterator()), 1);
}

TEST(BenchRecord, CpuModelIsNamed) { EXPECT_FALSE(cpu_model_name().empty()); }

TEST(BenchRecord, AnUnwritablePathIsRefusedBeforeAndAfterARun) {
  const fs::path dir = fresh_dir("refuse");
  const std::string missing = (dir / "no-such-folder" / "b.json").string();
  try {
    check_bench_json_path(missing, "bench --precision");
    FAIL() << "a path in a missing folder passed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bench --precision --json " + missing),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_bench_json_path((dir / "b.json").string(), "bench"));
  EXPECT_NO_THROW(check_bench_json_path("", "bench"));
  EXPECT_THROW(write_bench_json(missing, nlohmann::json::object(), some_runtime(), "bench"),
               UserError);
}

}  // namespace
}  // namespace lpdt::exp
