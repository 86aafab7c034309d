#pragma once
// Where a benchmark's numbers came from, recorded next to them: every `lpdt bench ... --json`
// file carries the build (version, git revision, build type, compiler, LibTorch), the machine
// (CPU model, logical cores, the vector level of the project's kernels, intra-op threads) and the
// UTC date, so that two files can be compared knowing what ran (docs/benchmarks.md).
#include <nlohmann/json.hpp>
#include <string>

#include "lpdt/core/runtime.h"

namespace lpdt::exp {

// What built this binary (build_info.h); also a run's summary.json "build".
nlohmann::json build_record();

// The first "model name" in /proc/cpuinfo, or "unknown" where there is none.
std::string cpu_model_name();

// The CPU, its logical cores and the runtime settings this process chose (runtime.h).
nlohmann::json machine_record(const RuntimeInfo& runtime);

// The current time in UTC, ISO 8601 to the second ("2026-11-26T03:04:05Z").
std::string utc_timestamp();

// The options every image-model benchmark shares (throughput, precision, scaling), as recorded
// in its JSON's "options"; a benchmark adds its own to the result.
template <typename ImageBenchOptions>
nlohmann::json image_bench_options(const ImageBenchOptions& options) {
  return {{"arch", options.arch},        {"depth", options.depth},
          {"norm", options.norm},
          {"nodes", options.nodes},      {"batch_per_node", options.batch_size},
          {"steps", options.steps},      {"warmup_steps", options.warmup_steps},
          {"threads", options.threads},  {"channels", options.channels},
          {"size", options.size}};
}

// Refuses, before a benchmark runs for minutes, a --json path whose folder does not exist or
// cannot be written: ConfigError naming `who` and the path. An empty path (no --json) passes.
void check_bench_json_path(const std::string& path, const std::string& who);

// Adds "build", "machine" and "date" to a benchmark's `results` and writes them to `path`
// atomically (run_folder.h), so that a failed write leaves an earlier file whole. UserError naming
// `who` (the command) and the path if it cannot be written.
void write_bench_json(const std::string& path, nlohmann::json results, const RuntimeInfo& runtime,
                      const std::string& who);

}  // namespace lpdt::exp
