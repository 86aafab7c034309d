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
#include <vector>

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

// While it lives, this process trains the run folder `dir`: an advisory lock (flock) on
// dir/.lpdt-lock, released when the process ends however it ends, so that a second process (a
// sweep started twice, a `train --resume` of a live run) cannot write the same folder. flock
// holds between processes of one machine (and on file systems that pass it on); shards of one
// sweep on several machines never share a run folder (docs/sweeps.md). UserError naming the
// folder when another process holds it; where no lock can be taken (a file system without
// flock), the folder is trained unlocked.
class RunFolderLock {
 public:
  explicit RunFolderLock(const std::filesystem::path& dir);
  ~RunFolderLock();
  RunFolderLock(const RunFolderLock&) = delete;
  RunFolderLock& operator=(const RunFolderLock&) = delete;

 private:
  int fd_ = -1;
};
// Whether another process holds `dir`'s RunFolderLock now.
bool run_folder_in_use(const std::filesystem::path& dir);

// Checks that writing `path` replaces nothing but this program's own earlier output of that
// kind: an existing regular file must begin with `signature` (e.g. "<!DOCTYPE html" for a
// report page), so that a mistyped output name cannot overwrite a run's summary.json, a sweep's
// table or any other file. ConfigError naming `option`, the path and what to do; an empty or
// missing path passes.
void check_replaces_only_own_output(const std::string& path, const std::string& option,
                                    const std::string& signature, const std::string& kind);

// The same for JSON output: an existing non-empty regular file must be a JSON object holding
// every key of `keys` (what this program's `kind` files hold), e.g. a benchmark's "rows",
// "build" and "machine"; a config file, a run's summary.json or any other file is refused.
void check_replaces_only_own_json(const std::string& path, const std::string& option,
                                  const std::vector<std::string>& keys, const std::string& kind);

// Why `path` cannot be written, for a message: its folder is missing or a file, the path is a
// folder, or the system's reason (`error_number`, an errno value).
std::string why_cannot_write(const std::filesystem::path& path, int error_number);

}  // namespace lpdt::exp
