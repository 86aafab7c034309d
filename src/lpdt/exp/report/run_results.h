#pragma once
// Reading a run folder or a sweep folder (docs/results.md, docs/sweeps.md) for the HTML report
// (docs/reports.md). Every file but the one that makes a folder a run is optional: a missing file
// is recorded in `missing` and its section omitted. A malformed file is a UserError naming the
// file, the line and what was expected.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace lpdt::exp::report {

// A CSV file with a header line: fields split on commas (the run files quote nothing).
struct CsvFile {
  std::filesystem::path path;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> line_numbers;  // the file line of each row (1-based; the header is line 1)
};
// UserError when the file cannot be read, is empty, lacks one of `required` columns, has a
// row whose number of fields differs from the header's, or ends without a newline (a line cut
// short).
CsvFile read_csv(const std::filesystem::path& path, const std::vector<std::string>& required);
// The number in a row's column: UserError naming the file, line and column when it is not one.
double csv_number(const CsvFile& csv, std::size_t row, const std::string& column);
// The row's "epoch" column as an epoch number: a whole number from 0 to 2^31 - 1 (UserError naming
// the file, line and value otherwise: NaN, fractions and huge values mark a damaged file).
int csv_epoch(const CsvFile& csv, std::size_t row);
// The same, but an empty field is NaN: a figure the run did not compute (epochs.csv's node
// accuracies with eval.per_node = false).
double csv_number_or_nan(const CsvFile& csv, std::size_t row, const std::string& column);

// metrics.csv: one row per epoch and node.
struct NodeEpoch {
  int epoch = 0, node = 0;
  double lr = 0, train_loss = 0, test_accuracy = 0, bytes_sent = 0;
};
// epochs.csv: one row per epoch; NaN for a figure the file leaves empty.
struct EpochSummary {
  int epoch = 0;
  double lr = 0, train_loss = 0, mean_accuracy = 0, min_accuracy = 0, max_accuracy = 0,
         average_model_accuracy = 0, consensus_distance = 0, mean_gb_sent_per_node = 0,
         elapsed_s = 0;
};

// layers.csv: one row per evaluated epoch and parameter tensor (docs/results.md).
struct LayerEpoch {
  int epoch = 0;
  std::string layer;  // the parameter tensor's name, e.g. "layer1.0.conv1.weight"
  double numel = 0, distance = 0, relative_distance = 0, mean_node_norm = 0, average_norm = 0;
};

// topology.json (lpdt topo --json): a static graph's edges, or a time-varying topology's graph
// of each step of its period (`steps`, each a static graph; `edges` then empty).
struct TopologyInfo {
  std::string name;
  int num_nodes = 0;
  std::optional<double> spectral_gap;
  struct Edge {
    int src = 0, dst = 0;
    double weight = 0;
  };
  std::vector<Edge> edges;
  std::vector<TopologyInfo> steps;
};

// cost.json: the cost model's figures per precision (training and inference of one iteration).
struct CostPhase {
  double adds = 0, mults = 0, energy_mj = 0;
  std::vector<std::pair<std::string, double>> memory_mib;  // parts in file order, "total" apart
  std::optional<double> memory_total_mib;
};
struct CostPrecision {
  std::string precision;
  std::optional<CostPhase> training, inference;
};
struct CostInfo {
  std::string model, norm, algorithm, energy_table;
  std::optional<int> batch_size;
  std::vector<CostPrecision> precisions;
};

struct RunResults {
  std::filesystem::path dir;
  std::string folder;                             // the folder's name
  std::optional<nlohmann::json> summary;          // summary.json
  std::optional<nlohmann::json> diverged;         // diverged.json (a run that stopped diverged)
  std::vector<NodeEpoch> node_epochs;             // metrics.csv
  std::vector<EpochSummary> epochs;               // epochs.csv
  std::vector<LayerEpoch> layer_epochs;           // layers.csv, in file order
  std::vector<std::vector<double>> class_counts;  // class_histogram.csv: [node][class]
  std::optional<TopologyInfo> topology;
  std::optional<CostInfo> cost;
  std::vector<std::string> missing;  // names of the optional files that are absent

  bool finished() const { return summary.has_value(); }
  bool has(const std::string& file) const;  // present (not in `missing`)
  int num_nodes() const;                    // from metrics.csv, else summary, else 0
};

// A run folder has summary.json or metrics.csv; a sweep folder has a runs/ subfolder.
bool is_run_folder(const std::filesystem::path& dir);
bool is_sweep_folder(const std::filesystem::path& dir);

RunResults read_run(const std::filesystem::path& dir);

struct SweepResults {
  std::filesystem::path dir;
  std::vector<RunResults> runs;  // every folder under runs/, by name
  struct Table {
    std::string file;      // table-<metric>.md
    std::string markdown;  // its text
  };
  std::vector<Table> tables;
};
SweepResults read_sweep(const std::filesystem::path& dir);

// A JSON object's leaves as "section.key" -> value (arrays are leaves).
std::map<std::string, nlohmann::json> flatten_json(const nlohmann::json& object);
// A config value as a label: strings without quotes, numbers compactly.
std::string json_label(const nlohmann::json& value);
// A number at a path of object keys ("final", "average_model_accuracy"), if present.
std::optional<double> json_number(const nlohmann::json& root, const std::vector<std::string>& path);
std::optional<std::string> json_string(const nlohmann::json& root,
                                       const std::vector<std::string>& path);

}  // namespace lpdt::exp::report
