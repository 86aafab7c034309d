// The page of a sweep folder (report_page.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "lpdt/exp/report/report_html.h"
#include "lpdt/exp/report/report_page.h"
#include "lpdt/exp/report/svg_chart.h"

namespace lpdt::exp::report {
namespace {

using nlohmann::json;

// Keys that differ between every run of a sweep by construction.
const std::set<std::string> kIgnoredKeys = {"run.seed", "run.name", "run.out_dir"};
const std::string kSkewKey = "data.skew";
const std::string kPrecisionKey = "model.precision";

// A run folder's name without its time stamp (name-YYYYMMDD-HHMMSS[-k], exp/run_folder.h): the
// sweep point it belongs to. A name without a stamp is its own point.
std::string point_of_folder(const std::string& folder) {
  const auto digits = [&](std::size_t from, std::size_t count) {
    if (from + count > folder.size()) return false;
    return std::all_of(folder.begin() + static_cast<std::ptrdiff_t>(from),
                       folder.begin() + static_cast<std::ptrdiff_t>(from + count),
                       [](char c) { return c >= '0' && c <= '9'; });
  };
  for (std::size_t dash = folder.find('-'); dash != std::string::npos;
       dash = folder.find('-', dash + 1)) {
    // "-YYYYMMDD-HHMMSS", then the end or "-k".
    const std::size_t end = dash + 16;
    if (digits(dash + 1, 8) && folder.size() >= end && folder[dash + 9] == '-' &&
        digits(dash + 10, 6) &&
        (end == folder.size() ||
         (folder[end] == '-' && end + 1 < folder.size() && digits(end + 1, folder.size() - end - 1)))) {
      return folder.substr(0, dash);
    }
  }
  return folder;
}

// Unfinished run folders that a later folder of the same point replaced (a sweep run again after
// it stopped before its first checkpoint trains the point anew): folder -> the newest folder.
std::map<std::string, std::string> superseded_runs(const SweepResults& sweep) {
  std::map<std::string, std::string> newest;  // point -> its newest folder (names sort by time)
  for (const RunResults& run : sweep.runs) {
    std::string& latest = newest[point_of_folder(run.folder)];
    latest = std::max(latest, run.folder);
  }
  std::map<std::string, std::string> superseded;
  for (const RunResults& run : sweep.runs) {
    const std::string& latest = newest[point_of_folder(run.folder)];
    if (!run.finished() && run.folder != latest) superseded[run.folder] = latest;
  }
  return superseded;
}

struct FinishedRun {
  const RunResults* run;
  std::map<std::string, json> config;  // flattened summary.json "config"
};

std::vector<FinishedRun> finished_runs(const SweepResults& sweep) {
  std::vector<FinishedRun> runs;
  for (const RunResults& run : sweep.runs) {
    if (run.summary) runs.push_back({&run, flatten_json(run.summary->value("config", json()))});
  }
  return runs;
}

// The runs that stopped diverged (diverged.json), with their configurations: not finished, but
// points of the grid all the same.
std::vector<FinishedRun> diverged_runs(const SweepResults& sweep) {
  std::vector<FinishedRun> runs;
  for (const RunResults& run : sweep.runs) {
    if (!run.summary && run.diverged) {
      runs.push_back({&run, flatten_json(run.diverged->value("config", json()))});
    }
  }
  return runs;
}

// The configuration keys whose values are not the same in every run given.
std::vector<std::string> varying_keys(const std::vector<FinishedRun>& runs) {
  std::set<std::string> keys;
  for (const auto& r : runs) {
    for (const auto& [key, value] : r.config) keys.insert(key);
  }
  std::vector<std::string> varying;
  for (const auto& key : keys) {
    if (kIgnoredKeys.count(key) || runs.empty()) continue;
    const auto first = runs.front().config.find(key);
    for (const auto& r : runs) {
      const auto it = r.config.find(key);
      const bool same = (it == r.config.end()) == (first == runs.front().config.end()) &&
                        (it == r.config.end() || it->second == first->second);
      if (!same) {
        varying.push_back(key);
        break;
      }
    }
  }
  return varying;
}

std::string value_of(const FinishedRun& r, const std::string& key) {
  const auto it = r.config.find(key);
  return it == r.config.end() ? "-" : json_label(it->second);
}

// Mean and sample standard deviation (0 for one value).
std::pair<double, double> mean_std(const std::vector<double>& v) {
  double mean = 0, sum_sq = 0;
  for (double x : v) mean += x / v.size();
  for (double x : v) sum_sq += (x - mean) * (x - mean);
  return {mean, v.size() > 1 ? std::sqrt(sum_sq / (v.size() - 1)) : 0.0};
}

std::string precision_of(const FinishedRun& r) {
  return r.config.count(kPrecisionKey) ? value_of(r, kPrecisionKey) : "fp32";
}

// Whether `key`'s value follows from the precision in every run, as it does for a key linked to
// it in the grid ("model.precision+algo.message_values"): such a key does not split the series
// of one precision (nor change their colour); their labels name it instead.
bool follows_precision(const std::vector<FinishedRun>& runs, const std::string& key) {
  std::map<std::string, std::string> value_at;
  for (const auto& r : runs) {
    const auto [it, inserted] = value_at.emplace(precision_of(r), value_of(r, key));
    if (!inserted && it->second != value_of(r, key)) return false;
  }
  return true;
}

std::string skew_section(const std::vector<FinishedRun>& runs,
                         const std::vector<std::string>& varying) {
  if (std::find(varying.begin(), varying.end(), kSkewKey) == varying.end()) {
    return "<p class=\"missing\">data.skew does not vary across the finished runs: no accuracy "
           "against skew plot.</p>\n";
  }
  const bool precision_varies =
      std::find(varying.begin(), varying.end(), kPrecisionKey) != varying.end();
  std::vector<std::string> others, linked;
  for (const auto& key : varying) {
    if (key == kSkewKey || key == kPrecisionKey) continue;
    (precision_varies && follows_precision(runs, key) ? linked : others).push_back(key);
  }
  // (group of the other keys' values, precision) -> skew -> accuracies over seeds.
  std::vector<std::string> groups;  // colour order: first appearance
  std::map<std::pair<std::string, std::string>, std::map<double, std::vector<double>>> points;
  std::vector<std::pair<std::string, std::string>> series_order;
  std::map<std::string, std::string> linked_label;  // precision -> " (linked key=value, ...)"
  for (const auto& r : runs) {
    const auto accuracy = json_number(*r.run->summary, {"final", "average_model_accuracy"});
    const auto skew = r.config.find(kSkewKey);
    if (!accuracy || skew == r.config.end() || !skew->second.is_number()) continue;
    std::string group;
    for (const auto& key : others)
      group += (group.empty() ? "" : ", ") + key + "=" + value_of(r, key);
    const std::string precision = precision_of(r);
    std::string& linked_values = linked_label[precision];
    if (!linked.empty() && linked_values.empty()) {
      for (const auto& key : linked) {
        linked_values += (linked_values.empty() ? " (" : ", ") + key + "=" + value_of(r, key);
      }
      linked_values += ")";
    }
    if (std::find(groups.begin(), groups.end(), group) == groups.end()) groups.push_back(group);
    const auto id = std::make_pair(group, precision);
    if (!points.count(id)) series_order.push_back(id);
    points[id][skew->second.get<double>()].push_back(*accuracy);
  }
  LineChart chart;
  chart.title = "Averaged-model accuracy against skew (mean over seeds)";
  chart.width = 900;
  chart.height = 420;
  chart.x = axis("skew (data.skew)");
  chart.y = axis("average-model test accuracy (%)");
  std::size_t max_n = 1;
  for (const auto& id : series_order) {
    const auto& [group, precision] = id;
    LineSeries s;
    s.name = group + (group.empty() ? "" : ", ") + precision + linked_label[precision];
    s.color = palette_color(std::find(groups.begin(), groups.end(), group) - groups.begin());
    s.dashed = precision != "fp32";
    s.markers = true;
    s.stroke_width = 2;
    s.css_class = precision == "fp32" ? "skew-line fp32" : "skew-line lowp";
    // Error bars rather than bands: bands of several series overlap into one blur. They are
    // dodged apart so that series with equal values stay readable; the points are not moved.
    s.error_bars = true;
    s.error_bar_dodge = 4.0 * (static_cast<double>(chart.series.size()) -
                               (static_cast<double>(series_order.size()) - 1) / 2);
    for (const auto& [skew, values] : points[id]) {
      const auto [mean, sd] = mean_std(values);
      s.x.push_back(skew);
      s.y.push_back(mean);
      s.spread.push_back(sd);
      max_n = std::max(max_n, values.size());
    }
    chart.series.push_back(std::move(s));
  }
  chart.notes.push_back("solid: fp32 (model.precision), dashed: lower precision (int8)");
  if (max_n > 1) {
    chart.notes.push_back("error bars: +- one sample standard deviation over seeds (n = " +
                          std::to_string(max_n) + " at most)");
  }
  return render_line_chart(chart);
}

std::string tables_section(const SweepResults& sweep) {
  if (sweep.tables.empty()) {
    return "<p class=\"missing\">No table-*.md in the sweep folder (lpdt sweep FILE "
           "--tables-only writes them): no tables.</p>\n";
  }
  std::string out;
  for (const auto& table : sweep.tables) {
    out += "<h3>" + xml_escape(table.file) + "</h3>\n" + markdown_tables_html(table.markdown);
  }
  return out;
}

std::string accuracy_sparkline(const RunResults& run) {
  std::vector<double> values;
  std::string title = run.folder + ": averaged-model accuracy per epoch:";
  for (const auto& e : run.epochs) {
    values.push_back(e.average_model_accuracy);
    title += ' ';
    title += format_number(e.average_model_accuracy);
  }
  return values.empty() ? "-" : render_sparkline(values, title);
}

std::string runs_section(const SweepResults& sweep, const std::vector<FinishedRun>& finished,
                         const std::vector<std::string>& varying) {
  std::vector<std::string> header = {"run"};
  header.insert(header.end(), varying.begin(), varying.end());
  for (const char* h : {"seed", "average-model accuracy (%)", "mean node accuracy (%)",
                        "GB sent per node", "accuracy per epoch"}) {
    header.push_back(h);
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : finished) {
    std::vector<std::string> row = {r.run->folder};
    for (const auto& key : varying) row.push_back(value_of(r, key));
    const json& s = *r.run->summary;
    const auto number = [&](const std::vector<std::string>& path) {
      const auto v = json_number(s, path);
      return v ? format_number(*v) : std::string("-");
    };
    row.push_back(number({"seed"}));
    row.push_back(number({"final", "average_model_accuracy"}));
    row.push_back(number({"final", "mean_node_accuracy"}));
    row.push_back(number({"final", "mean_gb_sent_per_node"}));
    row.push_back(accuracy_sparkline(*r.run));
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return "<p class=\"missing\">No finished run (no summary.json).</p>\n";
  return html_table(header, rows, {header.size() - 1});
}

std::string unfinished_section(const SweepResults& sweep) {
  std::vector<std::vector<std::string>> rows;
  const std::map<std::string, std::string> superseded = superseded_runs(sweep);
  for (const RunResults& run : sweep.runs) {
    if (run.finished()) continue;
    if (const auto it = superseded.find(run.folder); it != superseded.end()) {
      rows.push_back({run.folder,
                      "superseded: the point was trained again in " + it->second +
                          " (this folder is an earlier attempt, left as it was)",
                      accuracy_sparkline(run)});
      continue;
    }
    std::string progress =
        run.has("epochs.csv")
            ? std::to_string(run.epochs.size()) + " epoch(s) recorded in epochs.csv"
            : "no epochs.csv: not started, or stopped before it wrote its files";
    if (run.diverged) {
      const auto epoch = json_number(*run.diverged, {"epoch"});
      progress = "diverged" + (epoch ? " in epoch " + format_number(*epoch) : std::string()) +
                 " (diverged.json; the sweep does not train it again); " + progress;
    }
    rows.push_back({run.folder, progress, accuracy_sparkline(run)});
  }
  if (rows.empty()) return "<p class=\"note\">None: every run has a summary.json.</p>\n";
  return "<p class=\"note\">Runs without summary.json: diverged (their diverged.json says "
         "where), or still running, stopped, or not started.</p>\n" +
         html_table({"run", "progress", "accuracy per epoch"}, rows, {2}, "data unfinished");
}

}  // namespace

std::string sweep_report_html(const SweepResults& sweep) {
  const std::vector<FinishedRun> finished = finished_runs(sweep);
  const std::vector<std::string> varying = varying_keys(finished);
  // The header names the grid's keys over every run with a configuration, diverged ones too.
  std::vector<FinishedRun> configured = finished;
  const std::vector<FinishedRun> diverged = diverged_runs(sweep);
  configured.insert(configured.end(), diverged.begin(), diverged.end());
  const std::vector<std::string> grid_keys = varying_keys(configured);
  std::string name = sweep.dir.filename().string();
  if (name.empty()) name = sweep.dir.parent_path().filename().string();
  const std::size_t superseded = superseded_runs(sweep).size();
  std::string varying_text;
  for (const auto& key : grid_keys) varying_text += (varying_text.empty() ? "" : ", ") + key;
  std::string body =
      "<header>\n<h1>Sweep " + xml_escape(name) + "</h1>\n<p class=\"sub\">folder " +
      xml_escape(sweep.dir.string()) + ": " + std::to_string(sweep.runs.size()) + " runs, " +
      std::to_string(finished.size()) + " finished, " +
      std::to_string(sweep.runs.size() - finished.size() - superseded) + " unfinished (" +
      std::to_string(diverged.size()) + " diverged)" +
      (superseded > 0 ? ", " + std::to_string(superseded) + " superseded by a later attempt"
                      : std::string()) +
      "; varying keys: " + xml_escape(varying_text.empty() ? "none" : varying_text) +
      "</p>\n</header>\n";
  body += html_section("skew", "Accuracy against skew", skew_section(finished, varying));
  body += html_section("tables", "Tables", tables_section(sweep));
  // The grid's keys over every configured run: with diverged runs left out, a key may take one
  // value among the finished ones and still be a column the reader looks for.
  body += html_section("runs", "Runs", runs_section(sweep, finished, grid_keys));
  body += html_section("unfinished", "Unfinished runs", unfinished_section(sweep));
  return html_page("lpdt sweep " + name, body);
}

}  // namespace lpdt::exp::report
