#include "lpdt/exp/report/run_results.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "lpdt/core/error.h"
#include "lpdt/core/json_error_text.h"
#include "lpdt/exp/summary_file.h"
#include "lpdt/graph/factory.h"

namespace lpdt::exp::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

std::vector<std::string> split_commas(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    fields.push_back(line.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) return fields;
    start = comma + 1;
  }
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw UserError("cannot read '" + path.string() + "'");
  try {
    json j = json::parse(in);
    if (!j.is_object()) {
      throw UserError("'" + path.string() + "' must hold a JSON object, got a " +
                      std::string(j.type_name()));
    }
    return j;
  } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e999
    throw UserError("'" + path.string() + "' is not valid JSON (" + json_error_text(e) + ")");
  }
}

// A number field of a JSON object that the schema requires: UserError naming the file and key.
double required_number(const fs::path& file, const json& object, const std::string& key,
                       const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) {
    throw UserError("'" + file.string() + "': " + where + " needs a number '" + key + "'" +
                    (it == object.end() ? "" : ", got " + it->dump()));
  }
  return it->get<double>();
}

// A node id: a whole number within any graph lpdt makes (a cast of 1e30 or 1.7 would be another
// node, or none).
int node_id(const fs::path& file, const json& value, const std::string& where) {
  const double id = value.is_number() ? value.get<double>() : -1;
  if (!(id >= 0 && id < static_cast<double>(graph::kMaxNodes) && id == std::floor(id))) {
    throw UserError("'" + file.string() + "': " + where + " " + value.dump() +
                    " is not a node id (expected a whole number 0 to " +
                    std::to_string(graph::kMaxNodes - 1) + ")");
  }
  return static_cast<int>(id);
}

// The skew the sweep page plots against must be a number (read_run_summary checks the final
// figures): a value of another type is a damaged or hand-edited file, named here rather than
// drawn as a gap.
void check_summary_types(const fs::path& file, const json& summary) {
  const json& config = summary.at("config");  // read_run_summary checked it is an object
  if (config.contains("data") && config.at("data").is_object() &&
      config.at("data").contains("skew")) {
    const json& skew = config.at("data").at("skew");
    if (!skew.is_number() && !skew.is_null()) {
      throw UserError("'" + file.string() + "': \"config\".data.skew must be a number, got " +
                      skew.dump());
    }
  }
}

// The bounds within which a run writes a figure: one outside them (a negative count, an accuracy
// of 250 %, "nan" where the trainer writes a number) is a damaged or hand-edited file, named here
// rather than drawn off the chart or as a gap.
struct Bounds {
  double low, high;
  bool whole;
  bool nan_allowed;  // a figure that is NaN in a run that diverged (losses, distances)
  const char* expected;
};
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr Bounds kPercent{0, 100, false, false, "a percentage from 0 to 100"};
constexpr Bounds kCount{0, kInf, true, false, "a whole number, at least 0"};
constexpr Bounds kNonNegative{0, kInf, false, false, "a number, at least 0"};
constexpr Bounds kDistance{0, kInf, false, true, "a number, at least 0 (or nan where the run diverged)"};

// The row's column checked against `bounds`; an empty field is NaN (a figure the run did not
// compute) where `empty_allowed`.
double bounded_number(const CsvFile& csv, std::size_t row, const std::string& column,
                      const Bounds& bounds, bool empty_allowed = false) {
  const double value =
      empty_allowed ? csv_number_or_nan(csv, row, column) : csv_number(csv, row, column);
  const auto at = std::find(csv.header.begin(), csv.header.end(), column) - csv.header.begin();
  const std::string& field = csv.rows[row][static_cast<std::size_t>(at)];
  const bool empty = field.find_first_not_of(' ') == std::string::npos;
  const bool fits = std::isnan(value) ? (bounds.nan_allowed || (empty_allowed && empty))
                                      : value >= bounds.low && value <= bounds.high &&
                                            (!bounds.whole || value == std::floor(value));
  if (!fits) {
    throw UserError("'" + csv.path.string() + "' line " + std::to_string(csv.line_numbers[row]) +
                    ", column " + printable(column) + ": '" + printable_excerpt(field) +
                    "' is out of range (expected " +
                    bounds.expected + (empty_allowed ? ", or empty" : "") + ")");
  }
  return value;
}

TopologyInfo parse_topology(const fs::path& file, const json& j) {
  TopologyInfo topo;
  topo.name = json_string(j, {"name"}).value_or(json_string(j, {"label"}).value_or("topology"));
  topo.spectral_gap = json_number(j, {"spectral_gap"});
  const json* nodes = j.contains("nodes") && j["nodes"].is_array() ? &j["nodes"] : nullptr;
  if (const auto n = json_number(j, {"num_nodes"})) {
    if (!(*n >= 1 && *n <= static_cast<double>(graph::kMaxNodes))) {
      throw UserError("'" + file.string() + "': num_nodes = " + (std::ostringstream() << *n).str() +
                      " (expected 1 to " + std::to_string(graph::kMaxNodes) + ")");
    }
    topo.num_nodes = static_cast<int>(*n);
  } else if (nodes != nullptr) {
    topo.num_nodes = static_cast<int>(nodes->size());
  } else {
    throw UserError("'" + file.string() +
                    "' needs 'num_nodes' or a 'nodes' array (as written by "
                    "lpdt topo --json)");
  }
  if (!j.contains("edges") && j.contains("steps")) {
    // A time-varying topology (one-peer-exponential): the graph of each step of its period.
    if (!j["steps"].is_array() || j["steps"].empty()) {
      throw UserError("'" + file.string() +
                      "': 'steps' must be a non-empty array of graphs (one per step of a "
                      "time-varying topology's period)");
    }
    for (const json& step : j["steps"]) {
      if (!step.is_object()) {
        throw UserError("'" + file.string() + "': 'steps' must hold objects (one graph each)");
      }
      TopologyInfo graph = parse_topology(file, step);
      if (graph.num_nodes != topo.num_nodes) {
        throw UserError("'" + file.string() + "': a step's graph has " +
                        std::to_string(graph.num_nodes) + " nodes where num_nodes is " +
                        std::to_string(topo.num_nodes));
      }
      if (!graph.steps.empty()) {
        throw UserError("'" + file.string() + "': a step's graph has steps of its own");
      }
      if (const auto label = json_string(step, {"label"})) graph.name = *label;  // "... hop 2"
      topo.steps.push_back(std::move(graph));
    }
    if (const auto label = json_string(j, {"label"})) topo.name = *label;
  } else if (j.contains("edges") && j["edges"].is_array()) {
    for (const json& e : j["edges"]) {
      if (!e.is_object()) throw UserError("'" + file.string() + "': 'edges' must hold objects");
      required_number(file, e, "src", "an edge");
      required_number(file, e, "dst", "an edge");
      topo.edges.push_back({node_id(file, e.at("src"), "an edge's src"),
                            node_id(file, e.at("dst"), "an edge's dst"),
                            json_number(e, {"weight"}).value_or(kNaN)});
    }
  } else if (nodes != nullptr) {  // edges from each node's out-neighbours
    for (const json& node : *nodes) {
      required_number(file, node, "id", "a node");
      const int id = node_id(file, node.at("id"), "a node's id");
      if (node.contains("out_neighbors") && node["out_neighbors"].is_array()) {
        for (const json& dst : node["out_neighbors"]) {
          topo.edges.push_back({id, node_id(file, dst, "an out-neighbour"), kNaN});
        }
      }
    }
  } else {
    throw UserError("'" + file.string() +
                    "' needs an 'edges' array of {src, dst, weight} (or, for a time-varying "
                    "topology, a 'steps' array of such graphs)");
  }
  for (const auto& e : topo.edges) {
    if (e.src < 0 || e.dst < 0 || e.src >= topo.num_nodes || e.dst >= topo.num_nodes) {
      throw UserError("'" + file.string() + "': edge " + std::to_string(e.src) + " -> " +
                      std::to_string(e.dst) + " names a node outside 0.." +
                      std::to_string(topo.num_nodes - 1));
    }
  }
  return topo;
}

CostPhase parse_cost_phase(const fs::path& file, const json& j, const std::string& where) {
  if (!j.is_object()) throw UserError("'" + file.string() + "': " + where + " must be an object");
  CostPhase phase;
  phase.adds = json_number(j, {"adds"}).value_or(kNaN);
  phase.mults = json_number(j, {"mults"}).value_or(kNaN);
  phase.energy_mj = json_number(j, {"energy_mj"}).value_or(kNaN);
  if (j.contains("memory_mib")) {
    const json& memory = j["memory_mib"];
    if (!memory.is_object()) {
      throw UserError("'" + file.string() + "': " + where +
                      ".memory_mib must be an object of "
                      "MiB per part (weights, activations, ..., total)");
    }
    for (const auto& [key, value] : memory.items()) {
      if (!value.is_number()) continue;  // tolerant of extra, non-numeric keys
      if (key == "total") {
        phase.memory_total_mib = value.get<double>();
      } else {
        phase.memory_mib.emplace_back(key, value.get<double>());
      }
    }
  }
  return phase;
}

CostInfo parse_cost(const fs::path& file, const json& j) {
  CostInfo cost;
  cost.model = json_string(j, {"model"}).value_or("");
  cost.norm = json_string(j, {"norm"}).value_or("");
  cost.algorithm = json_string(j, {"algorithm"}).value_or("");
  cost.energy_table = json_string(j, {"energy_table", "name"})
                          .value_or(json_string(j, {"energy_table"}).value_or(""));
  if (const auto b = json_number(j, {"batch_size"})) cost.batch_size = static_cast<int>(*b);
  if (!j.contains("precisions") || !j["precisions"].is_array()) {
    throw UserError("'" + file.string() +
                    "' needs a 'precisions' array of {precision, training, "
                    "inference}");
  }
  for (const json& p : j["precisions"]) {
    if (!p.is_object() || !p.contains("precision") || !p["precision"].is_string()) {
      throw UserError("'" + file.string() +
                      "': each entry of 'precisions' needs a string "
                      "'precision' (fp32, int8, ...)");
    }
    CostPrecision entry;
    entry.precision = p["precision"].get<std::string>();
    for (const char* phase : {"training", "inference"}) {
      if (!p.contains(phase)) continue;
      auto parsed = parse_cost_phase(file, p[phase], entry.precision + "." + phase);
      (std::string(phase) == "training" ? entry.training : entry.inference) = std::move(parsed);
    }
    cost.precisions.push_back(std::move(entry));
  }
  return cost;
}

// Whether a run's file is there to read: false when nothing of that name exists; UserError
// naming it when something else than a file has its name (a folder, a FIFO), or its status
// cannot be read (a symbolic link loop, a folder that may not be searched). Such a file used to
// be reported as missing, or stopped the report with the library's "filesystem error".
bool run_file_present(const fs::path& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
    throw UserError("'" + path.string() + "' cannot be read: " + ec.message());
  }
  if (ec || !fs::exists(status)) return false;
  if (fs::is_directory(status)) {
    throw UserError("'" + path.string() + "' is a folder, expected the run's file of that name");
  }
  if (!fs::is_regular_file(status)) {
    throw UserError("'" + path.string() +
                    "' is not a regular file (a FIFO or a device?), expected the run's file of "
                    "that name");
  }
  return true;
}

// metrics.csv's node ids against the run's node count where another file gives it (summary.json's
// graph.nodes, else topology.json, else class_histogram.csv's rows): a node the run does not have
// is a damaged file, which would draw a line of its own and zero bars up to it.
void check_node_ids(const RunResults& run) {
  std::optional<double> known;
  std::string source;
  if (run.summary) known = json_number(*run.summary, {"config", "graph", "nodes"});
  if (known) {
    source = "summary.json's graph.nodes";
  } else if (run.topology) {
    known = run.topology->num_nodes;
    source = "topology.json";
  } else if (!run.class_counts.empty()) {
    known = static_cast<double>(run.class_counts.size());
    source = "class_histogram.csv";
  }
  if (!known) return;
  for (const NodeEpoch& row : run.node_epochs) {
    if (static_cast<double>(row.node) >= *known) {
      throw UserError("'" + (run.dir / "metrics.csv").string() + "': node " +
                      std::to_string(row.node) + " in epoch " + std::to_string(row.epoch) +
                      ", but the run has " + (std::ostringstream() << *known).str() + " nodes (" +
                      source + "): expected node ids 0 to " +
                      (std::ostringstream() << *known - 1).str());
    }
  }
}

// Reads whatever files the folder has; a missing one is noted in `missing`.
RunResults read_run_files(const fs::path& dir) {
  RunResults run;
  run.dir = dir;
  run.folder = dir.filename().string();
  if (run.folder.empty()) run.folder = dir.parent_path().filename().string();
  auto present = [&](const std::string& name) {
    if (run_file_present(dir / name)) return true;
    run.missing.push_back(name);
    return false;
  };
  if (present("summary.json")) {
    run.summary = read_run_summary(dir / "summary.json");
    check_summary_types(dir / "summary.json", *run.summary);
  }
  if (run_file_present(dir / "diverged.json")) {  // only a diverged run has one
    run.diverged = read_json(dir / "diverged.json");
  }
  if (present("metrics.csv")) {
    const CsvFile csv =
        read_csv(dir / "metrics.csv", {"epoch", "node", "test_accuracy", "bytes_sent"});
    const bool lr = std::count(csv.header.begin(), csv.header.end(), "lr") > 0;
    const bool loss = std::count(csv.header.begin(), csv.header.end(), "train_loss") > 0;
    for (std::size_t r = 0; r < csv.rows.size(); ++r) {
      // A node id indexes the page's per-node arrays: one outside any graph lpdt makes is a
      // damaged file, not a request for a billion rows.
      const double node = csv_number(csv, r, "node");
      if (!(node >= 0 && node < static_cast<double>(graph::kMaxNodes) && node == std::floor(node))) {
        throw UserError("'" + csv.path.string() + "' line " + std::to_string(csv.line_numbers[r]) +
                        ": node " + (std::ostringstream() << node).str() +
                        " is not a node id (expected 0 to " + std::to_string(graph::kMaxNodes - 1) +
                        ")");
      }
      run.node_epochs.push_back(
          {csv_epoch(csv, r), static_cast<int>(node),
           lr ? csv_number(csv, r, "lr") : kNaN, loss ? csv_number(csv, r, "train_loss") : kNaN,
           bounded_number(csv, r, "test_accuracy", kPercent),
           bounded_number(csv, r, "bytes_sent", kCount)});
    }
  }
  if (present("epochs.csv")) {
    const CsvFile csv = read_csv(dir / "epochs.csv", {"epoch", "average_model_accuracy"});
    auto column = [&](std::size_t r, const std::string& name) {
      return std::count(csv.header.begin(), csv.header.end(), name)
                 ? csv_number_or_nan(csv, r, name)
                 : kNaN;
    };
    auto bounded = [&](std::size_t r, const std::string& name, const Bounds& bounds) {
      return std::count(csv.header.begin(), csv.header.end(), name)
                 ? bounded_number(csv, r, name, bounds, /*empty_allowed=*/true)
                 : kNaN;
    };
    for (std::size_t r = 0; r < csv.rows.size(); ++r) {
      run.epochs.push_back({csv_epoch(csv, r), column(r, "lr"), column(r, "train_loss"),
                            bounded(r, "mean_accuracy", kPercent),
                            bounded(r, "min_accuracy", kPercent),
                            bounded(r, "max_accuracy", kPercent),
                            bounded(r, "average_model_accuracy", kPercent),
                            bounded(r, "consensus_distance", kDistance),
                            bounded(r, "mean_gb_sent_per_node", kNonNegative),
                            bounded(r, "elapsed_s", kNonNegative)});
    }
  }
  if (present("layers.csv")) {
    const CsvFile csv = read_csv(dir / "layers.csv",
                                 {"epoch", "layer", "numel", "distance", "relative_distance",
                                  "mean_node_norm", "average_norm"});
    const auto layer_column = static_cast<std::size_t>(
        std::find(csv.header.begin(), csv.header.end(), "layer") - csv.header.begin());
    for (std::size_t r = 0; r < csv.rows.size(); ++r) {
      run.layer_epochs.push_back(
          {csv_epoch(csv, r), csv.rows[r][layer_column], bounded_number(csv, r, "numel", kCount),
           bounded_number(csv, r, "distance", kDistance),
           bounded_number(csv, r, "relative_distance", kDistance),
           bounded_number(csv, r, "mean_node_norm", kDistance),
           bounded_number(csv, r, "average_norm", kDistance)});
    }
  }
  if (present("class_histogram.csv")) {
    const CsvFile csv = read_csv(dir / "class_histogram.csv", {"node"});
    const auto node_column = static_cast<std::size_t>(
        std::find(csv.header.begin(), csv.header.end(), "node") - csv.header.begin());
    for (std::size_t r = 0; r < csv.rows.size(); ++r) {
      // Row r is node r's bar: rows out of order or missing would draw one node's data as
      // another's.
      if (bounded_number(csv, r, "node", kCount) != static_cast<double>(r)) {
        throw UserError("'" + csv.path.string() + "' line " + std::to_string(csv.line_numbers[r]) +
                        ", column node: '" + printable_excerpt(csv.rows[r][node_column]) +
                        "' where node " + std::to_string(r) +
                        " was expected (one row per node, in order from 0)");
      }
      std::vector<double> counts;
      for (const auto& column : csv.header) {
        if (column != "node") counts.push_back(bounded_number(csv, r, column, kCount));
      }
      run.class_counts.push_back(std::move(counts));
    }
  }
  if (present("topology.json")) {
    const fs::path file = dir / "topology.json";
    run.topology = parse_topology(file, read_json(file));
  }
  if (present("cost.json")) {
    const fs::path file = dir / "cost.json";
    run.cost = parse_cost(file, read_json(file));
  }
  check_node_ids(run);
  return run;
}

}  // namespace

CsvFile read_csv(const fs::path& path, const std::vector<std::string>& required) {
  std::ifstream in(path);
  if (!in) throw UserError("cannot read '" + path.string() + "'");
  CsvFile csv;
  csv.path = path;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank lines
    // lpdt ends every line it writes with a newline: a last line without one was cut short
    // (a copy cut off, a disk that filled up, or the run writing it right now), and its last
    // field may be a number cut short, which would read as another number.
    if (in.eof()) {
      throw UserError("'" + path.string() + "' line " + std::to_string(number) +
                      ": the file ends in the middle of this line (no newline after '" +
                      printable_excerpt(line) +
                      "'): it was cut short, or the run is writing it; if the run is still "
                      "going, run this again, otherwise remove the cut line");
    }
    std::vector<std::string> fields = split_commas(line);
    if (csv.header.empty()) {
      csv.header = std::move(fields);
      for (const auto& column : required) {
        if (std::count(csv.header.begin(), csv.header.end(), column) == 0) {
          throw UserError("'" + path.string() + "' line " + std::to_string(number) +
                          ": the header lacks column '" + column + "' (expected the columns " +
                          join(required, ",") + ", got " + printable_excerpt(line) + ")");
        }
      }
      continue;
    }
    if (fields.size() != csv.header.size()) {
      throw UserError("'" + path.string() + "' line " + std::to_string(number) + ": " +
                      std::to_string(fields.size()) + " columns, expected " +
                      std::to_string(csv.header.size()) + " (the header: " +
                      printable_excerpt(join(csv.header, ","), 200) + ")");
    }
    csv.rows.push_back(std::move(fields));
    csv.line_numbers.push_back(number);
  }
  if (csv.header.empty()) {
    throw UserError("'" + path.string() + "' is empty (expected a header line with the columns " +
                    join(required, ",") + ")");
  }
  return csv;
}

double csv_number(const CsvFile& csv, std::size_t row, const std::string& column) {
  const auto it = std::find(csv.header.begin(), csv.header.end(), column);
  if (it == csv.header.end() || row >= csv.rows.size()) {
    throw UserError("'" + csv.path.string() + "' has no column '" + printable(column) + "'");
  }
  const std::string& field = csv.rows[row][it - csv.header.begin()];
  double value = 0;
  const char* begin = field.data();
  const char* end = begin + field.size();
  while (begin < end && *begin == ' ') ++begin;
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end || begin == end) {
    throw UserError("'" + csv.path.string() + "' line " + std::to_string(csv.line_numbers[row]) +
                    ", column " + printable(column) + ": '" + printable_excerpt(field) + "' is " +
                    (ec == std::errc::result_out_of_range && ptr == end
                         ? "beyond the range of a double (about 1e308)"
                         : "not a number"));
  }
  return value;
}

int csv_epoch(const CsvFile& csv, std::size_t row) {
  const double epoch = csv_number(csv, row, "epoch");
  if (!(epoch >= 0 && epoch <= std::numeric_limits<int>::max() && epoch == std::floor(epoch))) {
    throw UserError("'" + csv.path.string() + "' line " + std::to_string(csv.line_numbers[row]) +
                    ", column epoch: " + (std::ostringstream() << epoch).str() +
                    " is not an epoch number (expected a whole number from 0 to " +
                    std::to_string(std::numeric_limits<int>::max()) + ")");
  }
  return static_cast<int>(epoch);
}

double csv_number_or_nan(const CsvFile& csv, std::size_t row, const std::string& column) {
  const auto it = std::find(csv.header.begin(), csv.header.end(), column);
  if (it != csv.header.end() && row < csv.rows.size() &&
      csv.rows[row][it - csv.header.begin()].find_first_not_of(' ') == std::string::npos) {
    return kNaN;
  }
  return csv_number(csv, row, column);
}

bool RunResults::has(const std::string& file) const {
  return std::find(missing.begin(), missing.end(), file) == missing.end();
}

int RunResults::num_nodes() const {
  int n = 0;
  for (const auto& row : node_epochs) n = std::max(n, row.node + 1);
  if (n > 0) return n;
  if (summary) {
    if (const auto nodes = json_number(*summary, {"config", "graph", "nodes"})) {
      return static_cast<int>(*nodes);
    }
  }
  return static_cast<int>(class_counts.size());
}

bool is_run_folder(const fs::path& dir) {
  // Anything of those names (a damaged one is named when read).
  const auto there = [](const fs::path& path) {
    std::error_code ec;
    return fs::symlink_status(path, ec).type() != fs::file_type::not_found && !ec;
  };
  return there(dir / "summary.json") || there(dir / "metrics.csv");
}

bool is_sweep_folder(const fs::path& dir) { return fs::is_directory(dir / "runs"); }

RunResults read_run(const fs::path& dir) {
  if (!is_run_folder(dir)) {
    throw UserError("'" + dir.string() +
                    "' is not a run folder: expected summary.json or "
                    "metrics.csv in it (the folder lpdt train writes)");
  }
  return read_run_files(dir);
}

SweepResults read_sweep(const fs::path& dir) {
  const fs::path runs_dir = dir / "runs";
  if (!fs::is_directory(runs_dir)) {
    throw UserError("'" + dir.string() +
                    "' is not a sweep folder: expected a runs/ subfolder of "
                    "run folders (the out_dir lpdt sweep writes)");
  }
  SweepResults sweep;
  sweep.dir = dir;
  std::vector<fs::path> folders;
  for (const auto& entry : fs::directory_iterator(runs_dir)) {
    if (entry.is_directory()) folders.push_back(entry.path());
  }
  if (folders.empty()) {
    throw UserError("'" + runs_dir.string() +
                    "' holds no run folders (expected one folder per "
                    "run of the sweep)");
  }
  std::sort(folders.begin(), folders.end());
  for (const auto& folder : folders) sweep.runs.push_back(read_run_files(folder));
  std::vector<fs::path> tables;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.rfind("table-", 0) == 0 &&
        entry.path().extension() == ".md") {
      tables.push_back(entry.path());
    }
  }
  std::sort(tables.begin(), tables.end());
  for (const auto& path : tables) {
    std::ifstream in(path);
    if (!in) throw UserError("cannot read '" + path.string() + "'");
    std::ostringstream text;
    text << in.rdbuf();
    sweep.tables.push_back({path.filename().string(), text.str()});
  }
  return sweep;
}

std::map<std::string, json> flatten_json(const json& object) {
  std::map<std::string, json> leaves;
  if (!object.is_object()) return leaves;
  for (const auto& [key, value] : object.items()) {
    if (value.is_object()) {
      for (auto& [sub, leaf] : flatten_json(value)) leaves.emplace(key + "." + sub, leaf);
    } else {
      leaves.emplace(key, value);
    }
  }
  return leaves;
}

std::string json_label(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

std::optional<double> json_number(const json& root, const std::vector<std::string>& path) {
  const json* node = &root;
  for (const auto& key : path) {
    if (!node->is_object() || !node->contains(key)) return std::nullopt;
    node = &(*node)[key];
  }
  if (!node->is_number()) return std::nullopt;
  return node->get<double>();
}

std::optional<std::string> json_string(const json& root, const std::vector<std::string>& path) {
  const json* node = &root;
  for (const auto& key : path) {
    if (!node->is_object() || !node->contains(key)) return std::nullopt;
    node = &(*node)[key];
  }
  if (!node->is_string()) return std::nullopt;
  return node->get<std::string>();
}

}  // namespace lpdt::exp::report
