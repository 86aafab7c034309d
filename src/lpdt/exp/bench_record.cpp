#include "lpdt/exp/bench_record.h"

#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include "lpdt/build_info.h"
#include "lpdt/core/error.h"
#include "lpdt/exp/run_folder.h"

namespace lpdt::exp {

nlohmann::json build_record() {
  return {{"version", build_info::kVersion},
          {"git_revision", build_info::kGitRevision},
          {"build_type", build_info::kBuildType},
          {"compiler", build_info::kCompiler},
          {"torch", build_info::kTorchVersion}};
}

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    const std::size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "unknown" : line.substr(start);
  }
  return "unknown";
}

nlohmann::json machine_record(const RuntimeInfo& runtime) {
  return {{"cpu", cpu_model_name()},
          {"logical_cores", std::thread::hardware_concurrency()},
          {"cpu_kernels", runtime.cpu_kernels},
          {"intra_op_threads", runtime.intra_op_threads},
          {"memory_cap_bytes", runtime.data_limit_bytes},
          {"runtime", runtime.description()}};
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

void check_bench_json_path(const std::string& path, const std::string& who) {
  check_output_file(path, who + " --json");
  check_replaces_only_own_json(path, who + " --json", {"rows", "build", "machine", "date"},
                               "an earlier lpdt bench result");
}

void write_bench_json(const std::string& path, nlohmann::json results, const RuntimeInfo& runtime,
                      const std::string& who) {
  results["build"] = build_record();
  results["machine"] = machine_record(runtime);
  results["date"] = utc_timestamp();
  try {
    write_text_file(path, results.dump(2) + "\n");
  } catch (const UserError& e) {
    throw UserError(who + " --json " + path + ": " + e.what());
  }
}

}  // namespace lpdt::exp
