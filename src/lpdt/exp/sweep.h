#pragma once
// Sweeps (docs/sweeps.md): a grid over experiment keys, run point by point and seed by seed,
// resumably, then aggregated into tables laid out like the paper's (rows and columns of grid
// keys, mean and spread over seeds), as markdown and CSV.
//
// A sweep file (TOML):
//   base = "../configs/quickstart.toml"   # optional experiment file, relative to this file
//   out_dir = "sweeps/skew"               # runs and tables go here (relative to the cwd)
//   seeds = [1, 2, 3]
//   metrics = ["average_model_accuracy", "mean_gb_sent_per_node"]   # keys of summary "final"
//   [set]                                 # fixed overrides of any experiment key
//   "run.epochs" = 3
//   [grid]                                # every combination is a run, in this order
//   "algo.name" = ["deep-squeeze", "choco"]
//   "algo.keep_fraction+algo.consensus_step" = [[1.0, 1.0], [0.01, 0.01]]   # linked keys
//   "data.skew" = [0.0, 0.8]
//   [table]
//   rows = ["data.skew"]                  # default: every grid key but the last
//   columns = ["algo.name"]               # default: the last grid key
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "lpdt/exp/trainer.h"

namespace lpdt::exp {

struct SweepAxis {
  std::string key;                  // an experiment key, e.g. "data.skew"
  std::vector<std::string> values;  // each as a TOML value ("0.4", "\"choco\"")
  // A linked axis, key "k1+k2": keys that change together, e.g.
  //   "algo.keep_fraction+algo.consensus_step" = [[1.0, 1.0], [0.01, 0.01]]
  // linked_keys = {k1, k2}; linked_values[v] = the v-th value's TOML values, one per key; values[v]
  // is their labels joined by "," (names, tables).
  std::vector<std::string> linked_keys;
  std::vector<std::vector<std::string>> linked_values;
};

struct SweepSpec {
  std::filesystem::path file;
  std::optional<std::string> base;  // experiment TOML, resolved against file's folder
  std::filesystem::path out_dir;
  std::vector<std::uint64_t> seeds;
  std::vector<std::string> set;  // "key=value"
  std::vector<SweepAxis> grid;   // file order
  std::vector<std::string> rows, columns;
  std::vector<std::string> metrics;
};

// The numbers of a run's summary.json "final" that a sweep's metrics may name
// (average_model_accuracy, mean_gb_sent_per_node, ...).
const std::vector<std::string>& sweep_metric_names();

// Reads and checks a sweep file: ConfigError naming the file, the key and what was expected
// (unknown sweep keys or metrics, an empty out_dir, an empty grid list, a value or seed listed
// twice, a key varied by two grid entries or both fixed and varied, table keys that are not grid
// keys or leave one out, a grid point the experiment schema rejects: every point is resolved
// before anything runs).
SweepSpec load_sweep(const std::filesystem::path& file);

// One run of a sweep: a value per grid axis, and a seed.
struct SweepPoint {
  std::vector<std::string> values;  // as SweepSpec::grid
  std::uint64_t seed = 0;
  std::string name;  // the run's name (run.name), unique within the sweep
};

// Every point, the grid in file order (the last axis fastest), seeds innermost.
std::vector<SweepPoint> expand_sweep(const SweepSpec& spec);

// The experiment of a point: base < set < grid values < run.seed, run.out_dir, run.name.
ExperimentConfig sweep_point_config(const SweepSpec& spec, const SweepPoint& point);

// Where a point stands: done (a run folder with summary.json), diverged (its loss stopped being
// finite: diverged.json, exp/trainer.h; it would diverge again, so it is not retrained), resumable
// (a checkpoint of an unfinished run) or not started.
struct SweepRunState {
  // kInUse: another process is training its newest folder now (exp/run_folder.h RunFolderLock).
  enum class Kind { kDone, kDiverged, kResumable, kInUse, kNew } kind = Kind::kNew;
  std::filesystem::path dir;  // the run folder (done / resumable)
};
SweepRunState find_sweep_run(const SweepSpec& spec, const SweepPoint& point);

// A share of a sweep's runs, so that several processes (one per core, or machines sharing the
// out_dir) run one sweep side by side: shard `index` of `count` takes the points whose position p
// in expand_sweep's order has p % count == index - 1, so every point belongs to exactly one shard.
// Shards never write the same file: each run has its own folder (created atomically, run_folder.h)
// and its files are published by rename.
struct SweepShard {
  int index = 1;  // 1-based: "2/3" is the second of three
  int count = 1;
  bool owns(std::size_t point_position) const {
    return static_cast<int>(point_position % static_cast<std::size_t>(count)) == index - 1;
  }
};
// Parses "I/N" with 1 <= I <= N; UserError naming the value and the expected form.
SweepShard parse_sweep_shard(const std::string& text);

struct SweepOutcome {
  int trained = 0, resumed = 0, skipped = 0;
  int diverged = 0;      // runs of this invocation that diverged (the sweep goes on)
  int other_shards = 0;  // points left to the other shards
};
// Runs every point of `shard` that is not done or diverged (resuming unfinished ones from their
// checkpoints; a run that diverges is reported and the sweep goes on), then writes the tables
// from every run finished so far, whichever shard ran it (the last shard to finish writes
// complete ones; `lpdt sweep --tables-only` rewrites them). dry_run: only lists what would run.
// progress_bar: each run draws its bar (TrainOptions::progress_bar); the sweep's lines carry its
// own time left either way.
SweepOutcome run_sweep(const SweepSpec& spec, const ProgressSink& progress, bool dry_run = false,
                       bool progress_bar = false, const SweepShard& shard = {});

// One metric's table: a cell per (row, column) combination of grid values.
struct SweepCell {
  std::vector<double> values;  // one per finished seed
  double mean = 0, spread = 0;  // spread: sample standard deviation (0 for one seed)
  int diverged = 0;             // seeds whose run diverged (no values)
};
struct SweepTable {
  std::string metric;
  std::vector<std::vector<std::string>> row_labels, column_labels;  // values of rows / columns
  std::vector<std::vector<SweepCell>> cells;                        // [row][column]
  // The names of a row label's parts: spec.rows, then "epoch" in a per-epoch table.
  std::vector<std::string> row_keys;
};

// Reads the finished runs' summary.json. UserError naming the file when a metric is missing.
std::vector<SweepTable> aggregate_sweep(const SweepSpec& spec);
// The same metrics after every evaluated epoch, from the finished runs' epochs.csv: each row of
// aggregate_sweep's tables once per epoch (row_keys ends with "epoch"), for the metrics epochs.csv
// records (average_model_accuracy, mean_/min_/max_node_accuracy, consensus_distance,
// mean_gb_sent_per_node); other metrics have no per-epoch table. UserError naming the file, line
// and column of a malformed epochs.csv.
std::vector<SweepTable> aggregate_sweep_by_epoch(const SweepSpec& spec);
// Markdown ("mean ± spread (n)" per cell, "-" without a finished run, "diverged" when every run
// of the cell diverged, "..., d diverged" when some did) and CSV (one line per cell: the row and
// column values, mean, spread, n, diverged).
std::string sweep_table_markdown(const SweepSpec& spec, const SweepTable& table);
std::string sweep_table_csv(const SweepSpec& spec, const SweepTable& table);
// ConfigError when a table file the sweep would write in spec.out_dir exists and is not a
// sweep's table (a folder, or another file that writing would destroy). run_sweep checks it
// before training anything.
void check_sweep_tables_replaceable(const SweepSpec& spec);
// Writes table-<metric>.md / .csv for every metric, and epochs-<metric>.md / .csv for those with
// per-epoch values, into spec.out_dir (after check_sweep_tables_replaceable); returns the paths.
std::vector<std::filesystem::path> write_sweep_tables(const SweepSpec& spec);

}  // namespace lpdt::exp
