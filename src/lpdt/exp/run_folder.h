#pragma once
// The run folder: everything a run did, next to its results (docs/results.md).
//   config.toml         resolved configuration (every key)
//   metrics.csv         per epoch and node
//   epochs.csv          per epoch: averaged-model accuracy, consensus distance, bytes, time
//   summary.json        final figures, seed, backend, build, git revision
//   partition.json      per-node sample indices and class counts
//   class_histogram.csv per-node class counts
#include <filesystem>
#include <string>

namespace lpdt::exp {

// Creates a NEW folder `out_dir/name-YYYYMMDD-HHMMSS` (a numeric suffix if it exists): a run
// never writes into a folder that holds an earlier run. UserError if it cannot be created.
std::filesystem::path create_run_folder(const std::string& out_dir, const std::string& name);

// Writes `text` to `path` atomically (a temporary file of this process and call, then rename), so
// a crash never leaves a half-written file in place of a good one, and concurrent writers of the
// same path (sweep shards) each publish a whole file: the last rename stands. A link to a file
// is followed (the file is replaced, the link stays); an existing path that is not a regular file
// (/dev/stdout, a FIFO, a device) is written in place, never replaced. UserError naming `path`
// and why it cannot be written (a device that refuses the bytes included).
void write_text_file(const std::filesystem::path& path, const std::string& text);

// Checks before any work that `path` can be written: its folder exists and is writable, and the
// path is not a folder. ConfigError (a usage error) naming `option` (e.g. "topo --json"), the
// path and what to do. An empty path (the option not given) passes.
void check_output_file(const std::string& path, const std::string& option);

// Why `path` cannot be written, for a message: its folder is missing or a file, the path is a
// folder, or the system's reason (`error_number`, an errno value).
std::string why_cannot_write(const std::filesystem::path& path, int error_number);

}  // namespace lpdt::exp
