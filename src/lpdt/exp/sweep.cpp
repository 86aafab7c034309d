#include "lpdt/exp/sweep.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "lpdt/core/error.h"
#include "lpdt/core/file_text.h"
#include "lpdt/core/json_error_text.h"
#include "lpdt/core/string_literal.h"
#include "lpdt/exp/checkpoint.h"
#include "lpdt/exp/experiment_config.h"
#include "lpdt/exp/progress_meter.h"
#include "lpdt/exp/report/run_results.h"
#include "lpdt/exp/run_folder.h"
#include "lpdt/exp/summary_file.h"
#include "lpdt/exp/toml_error_text.h"

namespace lpdt::exp {
namespace {

namespace fs = std::filesystem;

// "file:line: message".
[[noreturn]] void fail(const fs::path& file, const toml::source_region& where,
                       const std::string& message) {
  throw ConfigError(file.string() + ":" + std::to_string(where.begin.line) + ": " + message);
}

// A TOML basic string: "text" with quotes, backslashes and control characters escaped.
std::string quoted(const std::string& text) { return double_quoted_literal(text); }

// A TOML value as it is written in a file (and taken by --set).
std::string toml_text(const toml::node& node) {
  std::ostringstream out;
  if (const auto* s = node.as_string()) {
    out << quoted(s->get());
  } else if (const auto* f = node.as_floating_point()) {
    // The shortest text that reads back as the same double ("0.8", not "0.80000000000000004").
    char text[64];
    const auto end = std::to_chars(text, text + sizeof(text), f->get()).ptr;
    std::string shortest(text, end);
    if (shortest.find_first_of(".eEn") == std::string::npos) shortest += ".0";
    out << shortest;
  } else {
    node.visit([&](const auto& value) { out << value; });
  }
  return out.str();
}

// The value a TOML value stands for, as text: an integer as the float it equals ("1" and "1.0"
// are one value of a float key), anything else as toml_text.
std::string value_identity(const toml::node& node) {
  if (const auto* i = node.as_integer()) {
    toml::value<double> as_float(static_cast<double>(i->get()));
    return toml_text(as_float);
  }
  if (const auto* tuple = node.as_array()) {
    std::string joined;
    for (const auto& part : *tuple) joined += value_identity(part) + ",";
    return joined;
  }
  return toml_text(node);
}

// The keys of a table in file order (toml++ iterates them sorted).
std::vector<std::pair<std::string, const toml::node*>> in_file_order(const toml::table& table) {
  std::vector<std::pair<std::string, const toml::node*>> keys;
  for (const auto& [key, node] : table) keys.emplace_back(std::string(key.str()), &node);
  std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
    return a.second->source().begin.line < b.second->source().begin.line;
  });
  return keys;
}

std::vector<std::string> string_list(const fs::path& file, const toml::node& node,
                                     const std::string& key) {
  const auto* array = node.as_array();
  if (array == nullptr) fail(file, node.source(), key + " must be a list of strings");
  std::vector<std::string> out;
  for (const auto& item : *array) {
    if (!item.is_string()) fail(file, item.source(), key + " must be a list of strings");
    out.push_back(item.as_string()->get());
  }
  return out;
}

// "algo.name-choco_data.skew-0.4_seed-1": a folder-safe, readable run name.
std::string point_name(const SweepSpec& spec, const std::vector<std::string>& values,
                       std::uint64_t seed) {
  std::string name;
  const auto append = [&](const std::string& key, const std::string& value) {
    if (!name.empty()) name += "_";
    for (const char c : key + "-" + value) {
      const bool safe = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-';
      if (c == '"') continue;
      name += safe ? c : '+';
    }
  };
  for (std::size_t a = 0; a < spec.grid.size(); ++a) append(spec.grid[a].key, values[a]);
  append("seed", std::to_string(seed));
  return name;
}

// The value label of a grid value in tables: a string as the string itself (no quotes, no
// escapes), anything else as written.
std::string label(const std::string& toml_value) {
  if (toml_value.size() >= 2 && toml_value.front() == '"' && toml_value.back() == '"') {
    try {
      const toml::table parsed = toml::parse("v = " + toml_value);
      if (const auto text = parsed["v"].value<std::string>()) return *text;
    } catch (const toml::parse_error&) {
      // Not one string literal (a linked axis' "a,b" label): as written.
    }
    return std::string(toml_value.begin() + 1, toml_value.end() - 1);
  }
  return toml_value;
}

// A label as one cell of a markdown table: a '|' would end the cell, a line break the row.
std::string markdown_cell(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::size_t axis_index(const SweepSpec& spec, const std::string& key) {
  for (std::size_t a = 0; a < spec.grid.size(); ++a) {
    if (spec.grid[a].key == key) return a;
  }
  return spec.grid.size();
}

// Every combination of the values of `keys` (grid order within the combination, last fastest).
std::vector<std::vector<std::string>> combinations(const SweepSpec& spec,
                                                   const std::vector<std::string>& keys) {
  std::vector<std::vector<std::string>> out{{}};
  for (const std::string& key : keys) {
    std::vector<std::vector<std::string>> next;
    for (const auto& prefix : out) {
      for (const std::string& value : spec.grid[axis_index(spec, key)].values) {
        auto combo = prefix;
        combo.push_back(value);
        next.push_back(std::move(combo));
      }
    }
    out = std::move(next);
  }
  return out;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string field = "\"";
  for (const char c : text) field += c == '"' ? std::string("\"\"") : std::string(1, c);
  return field + "\"";
}

// The grid values of the cell at (row, column), in grid order.
std::vector<std::string> cell_grid_values(const SweepSpec& spec,
                                          const std::vector<std::string>& row,
                                          const std::vector<std::string>& column) {
  std::vector<std::string> values(spec.grid.size());
  for (std::size_t r = 0; r < spec.rows.size(); ++r)
    values[axis_index(spec, spec.rows[r])] = row[r];
  for (std::size_t c = 0; c < spec.columns.size(); ++c) {
    values[axis_index(spec, spec.columns[c])] = column[c];
  }
  return values;
}

// A cell's mean and sample standard deviation s = sqrt(sum (v - mean)^2 / (n - 1)).
SweepCell make_cell(std::vector<double> values, int diverged) {
  SweepCell cell;
  cell.values = std::move(values);
  cell.diverged = diverged;
  if (cell.values.empty()) return cell;
  double sum = 0;
  for (const double v : cell.values) sum += v;
  cell.mean = sum / static_cast<double>(cell.values.size());
  double squares = 0;
  for (const double v : cell.values) squares += (v - cell.mean) * (v - cell.mean);
  cell.spread = cell.values.size() > 1
                    ? std::sqrt(squares / static_cast<double>(cell.values.size() - 1))
                    : 0.0;
  return cell;
}

// The epochs.csv column (exp/trainer.cpp) of a summary "final" metric; empty when epochs.csv does
// not record it.
std::string epochs_csv_column(const std::string& metric) {
  if (metric == "mean_node_accuracy") return "mean_accuracy";
  if (metric == "min_node_accuracy") return "min_accuracy";
  if (metric == "max_node_accuracy") return "max_accuracy";
  if (metric == "average_model_accuracy" || metric == "consensus_distance" ||
      metric == "mean_gb_sent_per_node") {
    return metric;
  }
  return "";
}

// A sweep table of the nodes' own accuracies needs runs that evaluate them: said before any run
// trains, not as a missing number in the tables after hours of training.
bool is_node_accuracy_metric(const std::string& metric) {
  return metric == "mean_node_accuracy" || metric == "min_node_accuracy" ||
         metric == "max_node_accuracy";
}

void check_metrics_computed(const SweepSpec& spec, const SweepPoint& point,
                            const ExperimentConfig& config) {
  if (config.eval.per_node || config.eval.protocol == EvalConfig::Protocol::kReference) return;
  for (const std::string& metric : spec.metrics) {
    if (is_node_accuracy_metric(metric)) {
      throw ConfigError(spec.file.string() + ": metrics names '" + printable(metric) +
                        "', but run " + point.name +
                        " sets eval.per_node = false, so it does not evaluate the nodes' own "
                        "models: set eval.per_node = true, or drop '" +
                        printable(metric) + "' from metrics");
    }
  }
}

std::string format_number(double value) {
  std::ostringstream out;
  out.precision(std::abs(value) >= 100 ? 5 : 4);
  out << value;
  return out.str();
}

}  // namespace

const std::vector<std::string>& sweep_metric_names() {
  // The number-valued keys the trainer writes in summary.json "final" (exp/trainer.cpp; the
  // sweep tests check each against a real run's summary).
  static const std::vector<std::string> kNames = {"average_model_accuracy",
                                                  "mean_node_accuracy",
                                                  "min_node_accuracy",
                                                  "max_node_accuracy",
                                                  "consensus_distance",
                                                  "mean_gb_sent_per_node",
                                                  "steps",
                                                  "wall_time_s",
                                                  "train_images_per_s"};
  return kNames;
}

SweepSpec load_sweep(const fs::path& file) {
  toml::table root;
  const std::string file_text = read_toml_file_text(file.string(), "sweep file");
  try {
    root = toml::parse(file_text, file.string());
  } catch (const toml::parse_error& e) {
    throw ConfigError(
        file.string() + ":" + std::to_string(e.source().begin.line) +
        ": not valid TOML: " + toml_error_text(e.description(), file_text, e.source().begin.line));
  }
  SweepSpec spec;
  spec.file = file;
  spec.out_dir = fs::path("sweeps") / file.stem();
  spec.metrics = {"average_model_accuracy", "mean_gb_sent_per_node"};
  const toml::table* table_section = nullptr;
  for (const auto& [key, node] : in_file_order(root)) {
    if (key == "base") {
      if (!node->is_string()) fail(file, node->source(), "base must be a path (string)");
      fs::path base = node->as_string()->get();
      if (base.is_relative()) base = file.parent_path() / base;
      std::error_code ec;
      if (!fs::is_regular_file(base, ec)) {
        fail(file, node->source(),
             "base = '" + node->as_string()->get() + "': " + base.string() +
                 (fs::exists(base, ec) ? " is not a file"
                                       : " does not exist (a relative base is read from the "
                                         "sweep file's folder)"));
      }
      spec.base = base.string();
    } else if (key == "out_dir") {
      if (!node->is_string()) fail(file, node->source(), "out_dir must be a path (string)");
      spec.out_dir = node->as_string()->get();
      if (spec.out_dir.empty()) {
        fail(file, node->source(),
             "out_dir is empty: expected the folder of the sweep's runs "
             "and tables (default sweeps/<file name>)");
      }
    } else if (key == "seeds") {
      const auto* array = node->as_array();
      if (array == nullptr || array->empty()) {
        fail(file, node->source(), "seeds must be a non-empty list of integers >= 0");
      }
      for (const auto& item : *array) {
        if (!item.is_integer() || item.as_integer()->get() < 0) {
          std::ostringstream value;
          item.visit([&](const auto& v) { value << v; });  // as TOML spells it: 1.5, "3", -2
          fail(file, item.source(),
               "seeds must be a list of integers >= 0, and " + value.str() + " is not one");
        }
        const auto seed = static_cast<std::uint64_t>(item.as_integer()->get());
        if (std::find(spec.seeds.begin(), spec.seeds.end(), seed) != spec.seeds.end()) {
          fail(file, item.source(),
               "seeds lists " + std::to_string(seed) + " twice: each seed is one run per point");
        }
        spec.seeds.push_back(seed);
      }
    } else if (key == "metrics") {
      spec.metrics = string_list(file, *node, "metrics");
      if (spec.metrics.empty()) fail(file, node->source(), "metrics must name at least one key");
      for (std::size_t m = 0; m < spec.metrics.size(); ++m) {
        const std::string& metric = spec.metrics[m];
        if (std::find(spec.metrics.begin(), spec.metrics.begin() + m, metric) !=
            spec.metrics.begin() + m) {
          fail(file, node->source(),
               "metrics names '" + printable(metric) + "' twice (its tables would be written "
               "twice): name each once");
        }
        const auto& known = sweep_metric_names();
        if (std::find(known.begin(), known.end(), metric) == known.end()) {
          std::string names;
          for (const std::string& name : known) names += (names.empty() ? "" : ", ") + name;
          fail(file, node->source(),
               "metrics names '" + printable(metric) +
                   "', which is not a number of summary.json \"final\"; "
                   "expected some of: " +
                   names);
        }
      }
    } else if (key == "set" || key == "grid") {
      const auto* section = node->as_table();
      if (section == nullptr) fail(file, node->source(), "[" + key + "] must be a table");
      for (const auto& [name, value] : in_file_order(*section)) {
        // Keys are taken as written: " optim.lr" would be another grid entry than "optim.lr"
        // but set the same key, so one value would silently replace the other.
        if (name.empty() || name.find_first_of(" \t\r\n") != std::string::npos) {
          fail(file, value->source(),
               "[" + key + "] key '" + printable(name) +
                   "' is empty or holds spaces: write the dotted key alone, e.g. \"optim.lr\"");
        }
        if (value->is_table()) {
          fail(file, value->source(),
               key == "set"
                   ? "[set] takes quoted dotted keys (\"run.epochs\" = 3), not sub-tables"
                   : "[grid] takes quoted dotted keys (\"optim.lr\" = [0.1, 0.05]), not "
                     "sub-tables");
        }
        // An experiment key the schema lacks, named at its line (resolving the points would
        // name it as a --set of the first run).
        {
          std::stringstream parts(name);
          for (std::string part; std::getline(parts, part, '+');) {
            if (part.empty() || experiment_schema().find(part)) continue;
            const auto suggestion = experiment_schema().suggest(part);
            fail(file, value->source(),
                 "[" + key + "] key '" + printable(part) + "' is not an experiment key" +
                     (suggestion ? "; did you mean '" + *suggestion + "'?" : std::string()) +
                     " (docs/config.md lists them)");
          }
        }
        if (key == "set") {
          spec.set.push_back(name + "=" + toml_text(*value));
          continue;
        }
        const auto* values = value->as_array();
        if (values == nullptr || values->empty()) {
          fail(file, value->source(),
               "grid key '" + printable(name) +
                   "' must be a non-empty list of values, e.g. [0.0, 0.4]");
        }
        SweepAxis axis{name, {}, {}, {}};
        if (name.find('+') == std::string::npos) {
          for (const auto& v : *values) axis.values.push_back(toml_text(v));
        } else {
          // Linked keys: each value is a list with one value per key.
          std::stringstream keys(name);
          for (std::string k; std::getline(keys, k, '+');) axis.linked_keys.push_back(k);
          if (name.front() == '+' || name.back() == '+' ||
              std::count(axis.linked_keys.begin(), axis.linked_keys.end(), "") > 0) {
            fail(file, value->source(),
                 "grid key '" + printable(name) +
                     "' links an empty key: join two or more keys with single '+', e.g. "
                     "\"model.precision+algo.message_values\"");
          }
          for (const auto& v : *values) {
            const auto* tuple = v.as_array();
            if (tuple == nullptr || tuple->size() != axis.linked_keys.size()) {
              fail(file, v.source(),
                   "grid key '" + printable(name) + "' links " +
                       std::to_string(axis.linked_keys.size()) +
                       " keys: each value must be a list of " +
                       std::to_string(axis.linked_keys.size()) + " values, e.g. [1.0, 1.0]");
            }
            std::vector<std::string> parts;
            std::string joined;
            for (const auto& part : *tuple) {
              parts.push_back(toml_text(part));
              if (!joined.empty()) joined += ',';
              joined += label(parts.back());
            }
            axis.linked_values.push_back(std::move(parts));
            axis.values.push_back(joined);
          }
        }
        // A value listed twice would be one run counted twice in the tables (1 and 1.0 too).
        for (std::size_t i = 0; i < axis.values.size(); ++i) {
          for (std::size_t j = 0; j < i; ++j) {
            if (value_identity((*values)[i]) == value_identity((*values)[j])) {
              fail(file, (*values)[i].source(),
                   "grid key '" + printable(name) + "' lists " +
                       (axis.values[i] == axis.values[j]
                            ? axis.values[i] + " twice"
                            : axis.values[j] + " and " + axis.values[i] + ", one value twice"));
            }
          }
        }
        spec.grid.push_back(std::move(axis));
      }
    } else if (key == "table") {
      table_section = node->as_table();
      if (table_section == nullptr) fail(file, node->source(), "[table] must be a table");
    } else {
      fail(file, node->source(),
           "unknown sweep key '" + printable(key) +
               "' (expected base, out_dir, seeds, metrics, [set], [grid], [table])");
    }
  }
  if (spec.grid.empty()) {
    throw ConfigError(file.string() + ": no [grid]: name at least one key and its values");
  }
  if (spec.seeds.empty()) {
    // Without seeds, each point runs once with run.seed's default; a base file's own seed would
    // be replaced without a word.
    const std::uint64_t default_seed = ExperimentConfig{}.run.seed;
    if (spec.base) {
      const std::uint64_t base_seed = load_experiment_config(spec.base, {}).run.seed;
      if (base_seed != default_seed) {
        throw ConfigError(file.string() + ": its base '" + *spec.base +
                          "' sets run.seed = " + std::to_string(base_seed) +
                          ", which the sweep would replace by its seeds (default [" +
                          std::to_string(default_seed) + "]): write seeds = [" +
                          std::to_string(base_seed) + "] in the sweep file");
      }
    }
    spec.seeds = {default_seed};
  }
  // Each key is varied by one axis, and fixed by [set] only when no axis varies it: otherwise one
  // value silently replaces the other and the run names and tables show the wrong one.
  std::set<std::string> varied;
  for (const auto& axis : spec.grid) {
    std::vector<std::string> keys = axis.linked_keys;
    if (keys.empty()) keys = {axis.key};
    for (const std::string& key : keys) {
      if (!varied.insert(key).second) {
        throw ConfigError(file.string() + ": grid key '" + printable(key) +
                          "' is varied by two [grid] entries; name it in one");
      }
    }
  }
  for (const std::string& assignment : spec.set) {
    const std::string key = assignment.substr(0, assignment.find('='));
    if (varied.count(key) != 0) {
      throw ConfigError(file.string() + ": [set] fixes '" + printable(key) +
                        "', which [grid] varies; remove it from one of them");
    }
    if (key == "run.seed" || key == "run.out_dir" || key == "run.name") {
      throw ConfigError(file.string() + ": [set] key '" + printable(key) +
                        "' is set by the sweep for each run (seeds = [...] for seeds, out_dir "
                        "for the folder; run names come from the grid values)");
    }
  }
  for (const auto& axis : spec.grid) {
    std::vector<std::string> keys = axis.linked_keys;
    if (keys.empty()) keys = {axis.key};
    for (const std::string& key : keys) {
      if (key == "run.seed" || key == "run.out_dir" || key == "run.name") {
        throw ConfigError(file.string() + ": grid key '" + printable(key) +
                          "' is set by the sweep for each run (seeds = [...] for seeds, out_dir "
                          "for the folder; run names come from the grid values)");
      }
    }
  }

  // The table layout: every grid key is a row or a column, once.
  for (std::size_t a = 0; a + 1 < spec.grid.size(); ++a) spec.rows.push_back(spec.grid[a].key);
  spec.columns = {spec.grid.back().key};
  if (table_section != nullptr) {
    bool rows_given = false;
    bool columns_given = false;
    for (const auto& [key, node] : in_file_order(*table_section)) {
      if (key == "rows") {
        spec.rows = string_list(file, *node, "table.rows");
        rows_given = true;
      } else if (key == "columns") {
        spec.columns = string_list(file, *node, "table.columns");
        columns_given = true;
      } else {
        fail(file, node->source(),
             "unknown [table] key '" + printable(key) + "' (expected rows, columns)");
      }
    }
    // One side given: the other holds the grid keys it leaves out (the defaults above could
    // place a key twice, e.g. rows = ["data.skew"] with one grid key).
    const auto rest = [&](const std::vector<std::string>& given) {
      std::vector<std::string> keys;
      for (const auto& axis : spec.grid) {
        if (std::find(given.begin(), given.end(), axis.key) == given.end()) {
          keys.push_back(axis.key);
        }
      }
      return keys;
    };
    if (rows_given && !columns_given) spec.columns = rest(spec.rows);
    if (columns_given && !rows_given) spec.rows = rest(spec.columns);
  }
  std::multiset<std::string> placed(spec.rows.begin(), spec.rows.end());
  placed.insert(spec.columns.begin(), spec.columns.end());
  for (const std::string& key : placed) {
    if (axis_index(spec, key) == spec.grid.size()) {
      throw ConfigError(file.string() + ": [table] names '" + printable(key) +
                        "', which is not a [grid] key");
    }
    if (placed.count(key) > 1) {
      throw ConfigError(file.string() + ": [table] places '" + printable(key) + "' twice");
    }
  }
  for (const auto& axis : spec.grid) {
    if (!placed.count(axis.key)) {
      throw ConfigError(file.string() + ": [table] leaves grid key '" + printable(axis.key) +
                        "' out: add it to rows or columns");
    }
  }

  // A run's name holds every grid key and value: a long grid makes names too long for a folder,
  // which is the sweep's doing, not a run.name the user set.
  for (const SweepPoint& point : expand_sweep(spec)) {
    if (point.name.size() > kMostRunNameBytes) {
      throw ConfigError(file.string() + ": the run name made from the grid's keys and values, '" +
                        point.name + "', is " + std::to_string(point.name.size()) +
                        " bytes long: expected at most " + std::to_string(kMostRunNameBytes) +
                        " (a folder's name, with its time stamp); use fewer or shorter [grid] keys "
                        "or values");
    }
  }
  // Every point must be a valid experiment before anything runs.
  for (const SweepPoint& point : expand_sweep(spec)) {
    try {
      sweep_point_config(spec, point);
    } catch (const ConfigError& e) {
      throw ConfigError(file.string() + ": the run " + point.name +
                        " is not a valid experiment: " + e.what());
    }
  }
  // Run names are folder-safe forms of the values: two points must not share one, or their runs
  // would be taken for each other.
  std::map<std::string, std::vector<std::string>> named;
  for (const SweepPoint& point : expand_sweep(spec)) {
    const auto [it, inserted] = named.try_emplace(point.name, point.values);
    if (!inserted) {
      std::string a, b;
      for (std::size_t v = 0; v < point.values.size(); ++v) {
        if (it->second[v] == point.values[v]) continue;
        a = spec.grid[v].key + " = " + it->second[v];
        b = point.values[v];
        break;
      }
      throw ConfigError(file.string() + ": the grid values " + a + " and " + b +
                        " give the same run name '" + point.name +
                        "' (run names keep letters, digits, '.' and '-', and turn other "
                        "characters into '+'): make the values differ in those characters");
    }
  }
  return spec;
}

std::vector<SweepPoint> expand_sweep(const SweepSpec& spec) {
  std::vector<std::string> keys;
  for (const auto& axis : spec.grid) keys.push_back(axis.key);
  std::vector<SweepPoint> points;
  for (const auto& values : combinations(spec, keys)) {
    for (const std::uint64_t seed : spec.seeds) {
      points.push_back(SweepPoint{values, seed, point_name(spec, values, seed)});
    }
  }
  return points;
}

ExperimentConfig sweep_point_config(const SweepSpec& spec, const SweepPoint& point) {
  std::vector<std::string> overrides = spec.set;
  for (std::size_t a = 0; a < spec.grid.size(); ++a) {
    const SweepAxis& axis = spec.grid[a];
    if (axis.linked_keys.empty()) {
      overrides.push_back(axis.key + "=" + point.values[a]);
      continue;
    }
    const auto v = static_cast<std::size_t>(
        std::find(axis.values.begin(), axis.values.end(), point.values[a]) - axis.values.begin());
    LPDT_CHECK(v < axis.values.size(), "sweep: a point's value is not on its linked axis");
    for (std::size_t k = 0; k < axis.linked_keys.size(); ++k) {
      overrides.push_back(axis.linked_keys[k] + "=" + axis.linked_values[v][k]);
    }
  }
  overrides.push_back("run.seed=" + std::to_string(point.seed));
  overrides.push_back("run.out_dir=" + quoted((spec.out_dir / "runs").string()));
  overrides.push_back("run.name=" + quoted(point.name));
  return load_experiment_config(spec.base, overrides);
}

SweepRunState find_sweep_run(const SweepSpec& spec, const SweepPoint& point) {
  SweepRunState state;
  const fs::path runs = spec.out_dir / "runs";
  if (!fs::is_directory(runs)) return state;
  // Run folders are name-YYYYMMDD-HHMMSS[-k]; the newest one speaks for the point.
  std::vector<fs::path> mine;
  for (const auto& entry : fs::directory_iterator(runs)) {
    const std::string folder = entry.path().filename().string();
    if (entry.is_directory() && folder.size() > point.name.size() + 1 &&
        folder.rfind(point.name + "-", 0) == 0 &&
        std::isdigit(static_cast<unsigned char>(folder[point.name.size() + 1]))) {
      mine.push_back(entry.path());
    }
  }
  if (mine.empty()) return state;
  std::sort(mine.begin(), mine.end());
  const fs::path dir = mine.back();
  const nlohmann::json wanted = to_json(sweep_point_config(spec, point));
  const int epochs = wanted.at("run").at("epochs").get<int>();
  if (fs::exists(dir / "summary.json")) {
    const nlohmann::json summary = read_run_summary(dir / "summary.json");
    const nlohmann::json* trained_epochs = nullptr;
    if (const auto& config = summary.at("config");
        config.contains("run") && config.at("run").is_object()) {
      const auto it = config.at("run").find("epochs");
      if (it != config.at("run").end() && it->is_number_integer()) trained_epochs = &*it;
    }
    if (trained_epochs == nullptr) {
      throw UserError("'" + (dir / "summary.json").string() +
                      "' has no whole number \"config\".run.epochs: a damaged summary.json; "
                      "restore it, or delete its run folder to train the run again");
    }
    // A sweep file changed under its runs: name the keys (run.epochs may grow), the sweep file
    // and what to do.
    try {
      check_resumable(summary.at("config"), wanted, dir / "summary.json", /*data_checked=*/false);
    } catch (const ConfigError& e) {
      throw ConfigError(spec.file.string() + ": its finished run differs from the sweep file " +
                        "now (" + e.what() +
                        "). To run the changed sweep, give it another "
                        "out_dir, or delete its runs; to add epochs, raise only run.epochs");
    }
    const int trained = trained_epochs->get<int>();
    if (trained > epochs) {
      // Its final figures are those of the longer run: a table of them would be mislabelled.
      throw ConfigError(spec.file.string() + ": run.epochs = " + std::to_string(epochs) +
                        ", but run '" + dir.string() + "' trained " + std::to_string(trained) +
                        " epochs: set run.epochs back to at least " + std::to_string(trained) +
                        " (per-epoch tables: epochs-<metric>.md), or give the sweep another "
                        "out_dir");
    }
    if (trained == epochs) return {SweepRunState::Kind::kDone, dir};
  }
  // Another sweep (or a `train --resume`) is training it: neither resume it nor start it anew.
  if (run_folder_in_use(dir)) return {SweepRunState::Kind::kInUse, dir};
  if (fs::exists(dir / kDivergedFile)) {
    const std::optional<std::string> text = read_file_text(dir / kDivergedFile);
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(text.value_or(""));
    } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e999
      throw UserError("'" + (dir / kDivergedFile).string() + "' is not valid JSON (" +
                      json_error_text(e) + ")");
    }
    if (!record.is_object() || !record.contains("config") || !record.at("config").is_object()) {
      throw UserError("'" + (dir / kDivergedFile).string() +
                      "' has no \"config\" object (the diverged run's configuration)");
    }
    check_resumable(record.at("config"), wanted, dir / kDivergedFile, /*data_checked=*/false);
    return {SweepRunState::Kind::kDiverged, dir};
  }
  if (fs::exists(dir / kCheckpointFile)) {
    const TrainingState saved = read_checkpoint(dir / kCheckpointFile);
    check_resumable(saved.config, wanted, dir / kCheckpointFile,
                    /*data_checked=*/!saved.data.is_null());
    // No summary.json: every epoch done counts too (stopped before its final evaluation).
    if (saved.epochs_done <= epochs) return {SweepRunState::Kind::kResumable, dir};
    // Its checkpoint is past the sweep's run.epochs: training it anew would leave two folders of
    // one point, and resuming cannot go back.
    throw ConfigError(spec.file.string() + ": run.epochs = " + std::to_string(epochs) +
                      ", but run '" + dir.string() + "' has a checkpoint after " +
                      std::to_string(saved.epochs_done) + " epochs: set run.epochs back to at " +
                      "least " + std::to_string(saved.epochs_done) +
                      ", or give the sweep another out_dir");
  }
  return state;  // an unfinished run without a usable checkpoint: train anew
}

SweepShard parse_sweep_shard(const std::string& text) {
  const auto fail = [&]() -> SweepShard {
    throw UserError("--shard '" + text +
                    "': expected I/N with 1 <= I <= N <= 999999, e.g. --shard 1/2 and --shard "
                    "2/2 in two "
                    "processes to run a sweep's points between them");
  };
  const std::size_t slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) return fail();
  const std::string index_text = text.substr(0, slash), count_text = text.substr(slash + 1);
  const auto all_digits = [](const std::string& part) {
    return part.size() <= 6 && std::all_of(part.begin(), part.end(), [](char c) {
             return std::isdigit(static_cast<unsigned char>(c)) != 0;
           });
  };
  if (!all_digits(index_text) || !all_digits(count_text)) return fail();
  SweepShard shard{std::stoi(index_text), std::stoi(count_text)};
  if (shard.count < 1 || shard.index < 1 || shard.index > shard.count) return fail();
  return shard;
}

namespace {

// `dir` (out_dir or a folder in it), made if missing; UserError naming the sweep file, out_dir
// and the system's reason (a read-only or full disk, no permission) when it cannot be.
void create_sweep_folder(const SweepSpec& spec, const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw UserError(spec.file.string() + ": out_dir = '" + spec.out_dir.string() +
                    "': cannot create '" + dir.string() + "': " + ec.message());
  }
}

}  // namespace

SweepOutcome run_sweep(const SweepSpec& spec, const ProgressSink& progress, bool dry_run,
                       bool progress_bar, const SweepShard& shard) {
  SweepOutcome outcome;
  // A file in the way of the tables is found now, not after hours of training.
  check_sweep_tables_replaceable(spec);
  const std::vector<SweepPoint> points = expand_sweep(spec);
  std::vector<SweepRunState> states;
  std::size_t left = 0;  // runs to train or resume
  for (std::size_t p = 0; p < points.size(); ++p) {
    const SweepPoint& point = points[p];
    check_metrics_computed(spec, point, sweep_point_config(spec, point));
    // Another shard's runs may be mid-write: this shard does not look at them.
    if (!shard.owns(p)) {
      states.emplace_back();
      continue;
    }
    states.push_back(find_sweep_run(spec, point));
    if (states.back().kind != SweepRunState::Kind::kDone &&
        states.back().kind != SweepRunState::Kind::kDiverged) {
      ++left;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  std::size_t finished_here = 0;
  if (shard.count > 1) {
    progress("shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count) + ": " +
             std::to_string((points.size() + static_cast<std::size_t>(shard.count - shard.index)) /
                            static_cast<std::size_t>(shard.count)) +
             " of the " + std::to_string(points.size()) + " runs");
  }
  for (std::size_t p = 0; p < points.size(); ++p) {
    const SweepPoint& point = points[p];
    if (!shard.owns(p)) {
      ++outcome.other_shards;
      continue;
    }
    std::ostringstream where_text;
    where_text << "[" << p + 1 << "/" << points.size() << "] " << point.name;
    const std::string where = where_text.str();
    SweepRunState state = states[p];
    // Two processes of one sweep (started twice, or shards of one N) must not both start a point
    // that has no run folder yet, which the folder's own lock cannot prevent: a claim per point,
    // held while it trains, decides, and the point's state is read again under it (the other
    // process may have finished or started it since).
    std::optional<RunFolderLock> claim;
    if (!dry_run && state.kind != SweepRunState::Kind::kDone &&
        state.kind != SweepRunState::Kind::kDiverged) {
      const fs::path claim_dir = spec.out_dir / ".claims" / point.name;
      create_sweep_folder(spec, claim_dir);
      try {
        claim.emplace(claim_dir);
      } catch (const UserError&) {
        progress(where + ": being trained by another process (it holds the claim " +
                 claim_dir.string() + "), skipped; run the sweep again once it has finished");
        ++outcome.skipped;
        continue;
      }
      state = find_sweep_run(spec, point);
    }
    const ExperimentConfig config = sweep_point_config(spec, point);
    TrainOptions options;
    options.progress_bar = progress_bar;
    // Interrupted, the sweep goes on where it stopped when run again (a run resumes from its
    // checkpoint), the next points included.
    options.continue_command =
        "lpdt sweep " + spec.file.string() +
        (shard.count > 1
             ? " --shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count)
             : std::string());
    if (state.kind == SweepRunState::Kind::kDone) {
      progress(where + ": done (" + state.dir.string() + "), skipped");
      ++outcome.skipped;
      continue;
    }
    if (state.kind == SweepRunState::Kind::kDiverged) {
      progress(where + ": diverged earlier (" + (state.dir / kDivergedFile).string() +
               "), skipped");
      ++outcome.skipped;
      continue;
    }
    if (state.kind == SweepRunState::Kind::kInUse) {
      progress(where + ": being trained by another process (" + state.dir.string() +
               "), skipped; run the sweep again once it has finished");
      ++outcome.skipped;
      continue;
    }
    // The sweep's time left: the mean time of the runs finished by this invocation, times the
    // runs left (a resumed run counts as a whole one).
    std::string eta;
    if (finished_here > 0) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      eta = ", sweep ETA " + format_duration(elapsed / static_cast<double>(finished_here) *
                                             static_cast<double>(left - finished_here));
    }
    if (state.kind == SweepRunState::Kind::kResumable) {
      options.resume_dir = state.dir;
      progress(where + (dry_run ? ": would resume " : ": resuming ") + state.dir.string() + eta);
      ++outcome.resumed;
    } else {
      progress(where + (dry_run ? ": would train" : ": training") + eta);
      ++outcome.trained;
    }
    if (dry_run) continue;
    try {
      train(
          config, [&](const std::string& line) { progress("  " + line); }, options);
    } catch (const TrainingDiverged& e) {
      // A grid point past the stable range is a result, not the end of the sweep.
      progress("  " + std::string(e.what()));
      ++outcome.diverged;
    }
    ++finished_here;
  }
  if (!dry_run) {
    for (const auto& path : write_sweep_tables(spec)) progress("table: " + path.string());
  }
  return outcome;
}

std::vector<SweepTable> aggregate_sweep(const SweepSpec& spec) {
  // The finished runs' summaries, by grid values.
  // (summary.json, its "final" object) of each finished run
  std::map<std::vector<std::string>, std::vector<std::pair<fs::path, nlohmann::json>>> finals;
  std::map<std::vector<std::string>, int> diverged;
  for (const SweepPoint& point : expand_sweep(spec)) {
    const SweepRunState state = find_sweep_run(spec, point);
    if (state.kind == SweepRunState::Kind::kDiverged) ++diverged[point.values];
    if (state.kind != SweepRunState::Kind::kDone) continue;
    const fs::path file = state.dir / "summary.json";
    finals[point.values].emplace_back(file, read_run_summary(file).at("final"));
  }
  std::vector<SweepTable> tables;
  const auto row_combos = combinations(spec, spec.rows);
  const auto column_combos = combinations(spec, spec.columns);
  for (const std::string& metric : spec.metrics) {
    SweepTable table{metric, row_combos, column_combos, {}, spec.rows};
    for (const auto& row : row_combos) {
      std::vector<SweepCell> cells;
      for (const auto& column : column_combos) {
        const std::vector<std::string> values = cell_grid_values(spec, row, column);
        std::vector<double> numbers;
        for (const auto& [file, final] : finals[values]) {
          if (final.contains(metric) && final.at(metric).is_null() &&
              is_node_accuracy_metric(metric)) {
            throw UserError(
                file.string() + " (a run of " + spec.file.string() + ") has \"final\"." + metric +
                " = null: it ran with eval.per_node = false and did not "
                "evaluate the nodes' own models (drop '" +
                printable(metric) + "' from metrics, or train with eval.per_node = true)");
          }
          if (!final.contains(metric) || !final.at(metric).is_number()) {
            throw UserError(file.string() + " (a run of " + spec.file.string() +
                            ") has no number \"final\"." + metric +
                            " (metrics: keys of summary.json \"final\", e.g. "
                            "average_model_accuracy, mean_node_accuracy, mean_gb_sent_per_node); "
                            "if the run wrote one, the file is damaged: train the run again");
          }
          numbers.push_back(final.at(metric).get<double>());
        }
        cells.push_back(make_cell(std::move(numbers), diverged[values]));
      }
      table.cells.push_back(std::move(cells));
    }
    tables.push_back(std::move(table));
  }
  return tables;
}

namespace {

// A finished run's epochs.csv as the run writes it: the column of every metric of the per-epoch
// tables, epochs in rising order, each once, the last being the run's last (a finished run
// always evaluates it). Otherwise its per-epoch cells would count the run twice, or leave it out
// where the final tables, read from summary.json, count it.
void check_finished_history(const SweepSpec& spec, const fs::path& run_dir,
                            const report::CsvFile& csv) {
  const std::string where = csv.path.string() + " (a finished run of " + spec.file.string() + ")";
  const std::string fix = ": restore it, or delete the run folder to train the run again";
  for (const std::string& metric : spec.metrics) {
    const std::string column = epochs_csv_column(metric);
    if (!column.empty() &&
        std::find(csv.header.begin(), csv.header.end(), column) == csv.header.end()) {
      throw UserError(where + " has no column '" + column + "' (metric " + metric + ")" + fix);
    }
  }
  int previous = -1;
  for (std::size_t r = 0; r < csv.rows.size(); ++r) {
    const int epoch = report::csv_epoch(csv, r);
    if (epoch <= previous) {
      throw UserError(where + " line " + std::to_string(csv.line_numbers[r]) + ": epoch " +
                      std::to_string(epoch) + " after epoch " + std::to_string(previous) +
                      " (expected each epoch once, in rising order)" + fix);
    }
    previous = epoch;
  }
  const std::optional<double> last =
      report::json_number(read_run_summary(run_dir / "summary.json"), {"config", "run", "epochs"});
  if (last && previous != static_cast<int>(*last)) {
    throw UserError(
        where + " ends at " +
        (previous < 0 ? std::string("its header") : "epoch " + std::to_string(previous)) +
        ", but the run trained " + std::to_string(static_cast<int>(*last)) +
        " epochs and evaluated the last (summary.json)" + fix);
  }
}

}  // namespace

std::vector<SweepTable> aggregate_sweep_by_epoch(const SweepSpec& spec) {
  // The finished runs' epochs.csv, by grid values, and every epoch any of them evaluated.
  std::map<std::vector<std::string>, std::vector<report::CsvFile>> histories;
  std::set<int> epochs;
  for (const SweepPoint& point : expand_sweep(spec)) {
    const SweepRunState state = find_sweep_run(spec, point);
    if (state.kind != SweepRunState::Kind::kDone) continue;
    // Every finished run wrote one: without it the run would silently drop out of these tables
    // while the final tables count it.
    if (!fs::is_regular_file(state.dir / "epochs.csv")) {
      throw UserError(
          (state.dir / "epochs.csv").string() + " is missing from a finished run of " +
          spec.file.string() +
          " (its per-epoch tables need it): restore it, or delete the run folder to train the "
          "run again");
    }
    report::CsvFile csv = report::read_csv(state.dir / "epochs.csv", {"epoch"});
    check_finished_history(spec, state.dir, csv);
    for (std::size_t r = 0; r < csv.rows.size(); ++r) {
      epochs.insert(report::csv_epoch(csv, r));
    }
    histories[point.values].push_back(std::move(csv));
  }
  std::vector<SweepTable> tables;
  const auto row_combos = combinations(spec, spec.rows);
  const auto column_combos = combinations(spec, spec.columns);
  std::vector<std::string> row_keys = spec.rows;
  row_keys.push_back("epoch");
  for (const std::string& metric : spec.metrics) {
    const std::string column_name = epochs_csv_column(metric);
    if (column_name.empty()) continue;
    SweepTable table{metric, {}, column_combos, {}, row_keys};
    for (const auto& row : row_combos) {
      for (const int epoch : epochs) {
        std::vector<SweepCell> cells;
        bool any = false;
        for (const auto& column : column_combos) {
          std::vector<double> numbers;
          for (const report::CsvFile& csv : histories[cell_grid_values(spec, row, column)]) {
            const bool has_column =
                std::find(csv.header.begin(), csv.header.end(), column_name) != csv.header.end();
            for (std::size_t r = 0; has_column && r < csv.rows.size(); ++r) {
              if (report::csv_epoch(csv, r) == epoch) {
                // Empty when the run did not compute it (eval.per_node = false).
                const double number = report::csv_number_or_nan(csv, r, column_name);
                if (!std::isnan(number)) numbers.push_back(number);
              }
            }
          }
          any = any || !numbers.empty();
          cells.push_back(make_cell(std::move(numbers), 0));
        }
        if (!any) continue;  // no run of this row evaluated this epoch
        std::vector<std::string> label_values = row;
        label_values.push_back(std::to_string(epoch));
        table.row_labels.push_back(std::move(label_values));
        table.cells.push_back(std::move(cells));
      }
    }
    tables.push_back(std::move(table));
  }
  return tables;
}

std::string sweep_table_markdown(const SweepSpec& spec, const SweepTable& table) {
  std::ostringstream out;
  out << "**" << table.metric << "** (mean ± sample standard deviation over seeds (n); "
      << spec.file.filename().string() << ")\n\n|";
  for (const auto& key : table.row_keys) out << " " << key << " |";
  for (const auto& column : table.column_labels) {
    std::string name;
    for (const auto& v : column) name += (name.empty() ? "" : " / ") + markdown_cell(label(v));
    if (column.empty()) name = table.metric;  // every grid key is a row: one column
    out << " " << name << " |";
  }
  out << "\n|";
  for (std::size_t i = 0; i < table.row_keys.size() + table.column_labels.size(); ++i)
    out << "---|";
  out << "\n";
  for (std::size_t r = 0; r < table.row_labels.size(); ++r) {
    out << "|";
    for (const auto& v : table.row_labels[r]) out << " " << markdown_cell(label(v)) << " |";
    for (const SweepCell& cell : table.cells[r]) {
      const std::string diverged =
          cell.diverged > 1 ? " (" + std::to_string(cell.diverged) + ")" : std::string();
      if (cell.values.empty()) {
        out << (cell.diverged > 0 ? " diverged" + diverged + " |" : " - |");
        continue;
      }
      if (cell.values.size() == 1) {
        out << " " << format_number(cell.mean);
      } else {
        out << " " << format_number(cell.mean) << " ± " << format_number(cell.spread) << " ("
            << cell.values.size() << ")";
      }
      if (cell.diverged > 0) out << ", " << cell.diverged << " diverged";
      out << " |";
    }
    out << "\n";
  }
  return out.str();
}

std::string sweep_table_csv(const SweepSpec& spec, const SweepTable& table) {
  std::ostringstream out;
  for (const auto& key : table.row_keys) out << csv_field(key) << ",";
  for (const auto& key : spec.columns) out << csv_field(key) << ",";
  out << "metric,mean,spread,n,diverged\n";
  out.precision(10);
  for (std::size_t r = 0; r < table.row_labels.size(); ++r) {
    for (std::size_t c = 0; c < table.column_labels.size(); ++c) {
      for (const auto& v : table.row_labels[r]) out << csv_field(label(v)) << ",";
      for (const auto& v : table.column_labels[c]) out << csv_field(label(v)) << ",";
      const SweepCell& cell = table.cells[r][c];
      out << table.metric << ",";
      if (cell.values.empty()) {
        out << ",,0";
      } else {
        // One run has no spread (the sample standard deviation needs two): empty, as the
        // markdown table shows none.
        out << cell.mean << ",";
        if (cell.values.size() > 1) out << cell.spread;
        out << "," << cell.values.size();
      }
      out << "," << cell.diverged << "\n";
    }
  }
  return out.str();
}

namespace {

// The table files write_sweep_tables writes: table-<metric>.md / .csv for every metric, and
// epochs-<metric>.md / .csv for those epochs.csv records.
std::vector<fs::path> sweep_table_files(const SweepSpec& spec) {
  std::vector<fs::path> files;
  for (const std::string& metric : spec.metrics) {
    for (const char* prefix : {"table-", "epochs-"}) {
      if (std::string(prefix) == "epochs-" && epochs_csv_column(metric).empty()) continue;
      files.push_back(spec.out_dir / (prefix + metric + ".md"));
      files.push_back(spec.out_dir / (prefix + metric + ".csv"));
    }
  }
  return files;
}

// Whether `file` is a table of this program's own (sweep_table_markdown / sweep_table_csv), by
// its first line: markdown opens with "**<metric>** (mean ± sample standard deviation", CSV's
// header ends with "metric,mean,spread,n,diverged".
bool is_sweep_table(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string first;
  std::getline(in, first);
  if (file.extension() == ".md") {
    return first.rfind("**", 0) == 0 &&
           first.find("** (mean ± sample standard deviation over seeds") != std::string::npos;
  }
  const std::string header = "metric,mean,spread,n,diverged";
  return first.size() >= header.size() &&
         first.compare(first.size() - header.size(), header.size(), header) == 0;
}

}  // namespace

void check_sweep_tables_replaceable(const SweepSpec& spec) {
  // out_dir, or the nearest of its parents that exists, must be a folder (a dry run creates
  // nothing, but says so too).
  for (fs::path dir = spec.out_dir; !dir.empty(); dir = dir.parent_path()) {
    std::error_code ec;
    const fs::file_status status = fs::status(dir, ec);
    if (status.type() == fs::file_type::not_found) {
      if (dir == dir.parent_path()) break;
      continue;
    }
    if (status.type() != fs::file_type::directory) {
      throw ConfigError(spec.file.string() + ": out_dir = '" + spec.out_dir.string() + "': '" +
                        dir.string() +
                        "' is not a folder: set out_dir to a folder (existing or to be made)");
    }
    break;
  }
  for (const fs::path& file : sweep_table_files(spec)) {
    std::error_code ec;
    if (!fs::exists(file, ec)) continue;
    if (!fs::is_regular_file(file, ec) || !is_sweep_table(file)) {
      throw ConfigError("sweep out_dir " + spec.out_dir.string() + ": '" + file.string() +
                        "' exists and is not a table of a sweep, and the sweep writes its "
                        "table there, which would destroy it: set out_dir to a folder of its "
                        "own, or move the file away first");
    }
  }
}

std::vector<fs::path> write_sweep_tables(const SweepSpec& spec) {
  check_sweep_tables_replaceable(spec);
  create_sweep_folder(spec, spec.out_dir);
  std::vector<fs::path> written;
  const auto write_all = [&](const std::string& prefix, const std::vector<SweepTable>& tables) {
    for (const SweepTable& table : tables) {
      const fs::path md = spec.out_dir / (prefix + table.metric + ".md");
      const fs::path csv = spec.out_dir / (prefix + table.metric + ".csv");
      write_text_file(md, sweep_table_markdown(spec, table));
      write_text_file(csv, sweep_table_csv(spec, table));
      written.push_back(md);
      written.push_back(csv);
    }
  };
  write_all("table-", aggregate_sweep(spec));
  write_all("epochs-", aggregate_sweep_by_epoch(spec));
  return written;
}

}  // namespace lpdt::exp
