// The page of one run folder (report_page.h).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "lpdt/exp/experiment_config.h"
#include "lpdt/exp/report/report_html.h"
#include "lpdt/exp/report/report_page.h"
#include "lpdt/exp/report/svg_chart.h"

namespace lpdt::exp::report {
namespace {

using nlohmann::json;

constexpr double kBytesPerMb = 1e6;
// The consensus distance gets a log axis when its values span more than this ratio.
constexpr double kLogAxisSpan = 100;

// Why a section has no figures: its file is missing, or holds only its header (a run stopped or
// diverged before it wrote a row).
std::string no_rows_note(const RunResults& run, const std::string& file, const std::string& what) {
  if (!run.has(file)) return missing_note(file, what);
  return "<p class=\"missing\">" + xml_escape(file) + " has no rows yet: no " + xml_escape(what) +
         ".</p>\n";
}

// A summary.json value as text ("" when absent).
std::string summary_text(const RunResults& run, const std::vector<std::string>& path) {
  if (!run.summary) return "";
  const json* node = &*run.summary;
  for (const auto& key : path) {
    if (!node->is_object() || !node->contains(key)) return "";
    node = &(*node)[key];
  }
  return node->is_number() ? format_number(node->get<double>()) : json_label(*node);
}

std::string percent(std::optional<double> v) { return v ? format_number(*v) + " %" : "-"; }

// A configuration value as text: from summary.json, or from diverged.json of a run that stopped
// diverged ("" when absent).
std::string config_text(const RunResults& run, const std::string& section,
                        const std::string& key) {
  if (run.summary) return summary_text(run, {"config", section, key});
  if (!run.diverged) return "";
  const json* node = &*run.diverged;
  for (const std::string& k : {std::string("config"), section, key}) {
    if (!node->is_object() || !node->contains(k)) return "";
    node = &(*node)[k];
  }
  return node->is_number() ? format_number(node->get<double>()) : json_label(*node);
}

// The header rows that describe the experiment (its configuration).
std::vector<std::vector<std::string>> experiment_rows(
    const std::function<std::string(const std::string&, const std::string&)>& cfg,
    const std::string& topology_text) {
  std::string compression = cfg("algo", "compressor");
  if (!compression.empty() && compression != "none") {
    compression += ", keep fraction " + cfg("algo", "keep_fraction");
  }
  if (!cfg("algo", "message_values").empty()) {
    compression += ", message values " + cfg("algo", "message_values");
  }
  std::string precision = cfg("model", "precision");
  if (!precision.empty() && precision != "fp32") {
    precision += " (quant backend " + cfg("quant", "backend") + ")";
  }
  return {
      {"algorithm", cfg("algo", "name") + ", consensus step " + cfg("algo", "consensus_step")},
      {"model", arch_uses_model_norm(cfg("model", "arch"))
                    ? cfg("model", "arch") + " (norm " + cfg("model", "norm") + ")"
                    : cfg("model", "arch")},
      {"precision", precision},
      {"topology", topology_text + ", mixing " + cfg("graph", "mixing")},
      {"nodes", cfg("graph", "nodes")},
      {"data", cfg("data", "dataset") + ", partition " + cfg("data", "partition") + ", skew " +
                   cfg("data", "skew")},
      {"compression", compression},
      {"epochs", cfg("run", "epochs")},
      {"batch size per node", cfg("data", "batch_size")}};
}

std::string kv_table(const std::vector<std::vector<std::string>>& rows) {
  std::string out = "<table class=\"kv\">\n";
  for (const auto& row : rows) {
    out += "<tr><th>" + xml_escape(row[0]) + "</th><td>" + xml_escape(row[1]) + "</td></tr>\n";
  }
  return out + "</table>\n";
}

std::string header_html(const RunResults& run) {
  const auto cfg = [&](const std::string& section, const std::string& key) {
    return config_text(run, section, key);
  };
  std::string name = cfg("run", "name");
  if (name.empty()) name = run.folder;
  std::string out = "<h1>Run " + xml_escape(name) + "</h1>\n<p class=\"sub\">folder " +
                    xml_escape(run.dir.string()) + "</p>\n";
  if (!run.summary && run.diverged) {
    const auto epoch = json_number(*run.diverged, {"epoch"});
    const std::string message = run.diverged->value("message", std::string());
    out += "<p class=\"missing\">The run stopped diverged" +
           (epoch ? " in epoch " + format_number(*epoch) : std::string()) +
           (message.empty() ? std::string() : ": " + xml_escape(message)) +
           " (diverged.json). It has no summary.json; the figures below are the epochs recorded "
           "before it stopped.</p>\n";
    return out + kv_table(experiment_rows(cfg, cfg("graph", "topology")));
  } else if (!run.summary) {
    out +=
        "<p class=\"missing\">summary.json is missing: the run has not finished; the figures "
        "below are the epochs recorded so far.</p>\n";
    if (!run.epochs.empty()) {
      const EpochSummary& last = run.epochs.back();
      out += html_table(
          {"last epoch", "average-model accuracy", "node accuracy mean [min, max]"},
          {{std::to_string(last.epoch), percent(last.average_model_accuracy),
            std::isnan(last.mean_accuracy)
                ? std::string("not evaluated (eval.per_node = false)")
                : format_number(last.mean_accuracy) + " % [" + format_number(last.min_accuracy) +
                      ", " + format_number(last.max_accuracy) + "]"}});
    }
    return out;
  }
  const json& s = *run.summary;
  std::string backend;
  for (const char* key : {"engine", "device", "precision", "quant_backend"}) {
    const std::string v = summary_text(run, {"backend", key});
    if (!v.empty()) backend += (backend.empty() ? "" : ", ") + std::string(key) + " " + v;
  }
  std::string revision = summary_text(run, {"build", "git_revision"});
  if (const std::string version = summary_text(run, {"build", "version"}); !version.empty()) {
    revision += " (lpdt " + version + ")";
  }
  std::string topology = cfg("graph", "topology");
  if (const auto gap = json_number(s, {"topology", "spectral_gap"})) {
    topology += ", spectral gap " + format_number(*gap);
  }
  std::vector<std::vector<std::string>> rows = experiment_rows(cfg, topology);
  // eval.per_node = false: the nodes' figures are null, said as such.
  const auto mean_node = json_number(s, {"final", "mean_node_accuracy"});
  const std::vector<std::vector<std::string>> figures = {
      {"average-model accuracy", percent(json_number(s, {"final", "average_model_accuracy"}))},
      {"node accuracy mean [min, max]",
       mean_node ? percent(mean_node) + " [" + summary_text(run, {"final", "min_node_accuracy"}) +
                       ", " + summary_text(run, {"final", "max_node_accuracy"}) + "]"
                 : std::string("not evaluated (eval.per_node = false)")},
      {"consensus distance", summary_text(run, {"final", "consensus_distance"})},
      {"GB sent per node", summary_text(run, {"final", "mean_gb_sent_per_node"})},
      {"wall time (s)", summary_text(run, {"final", "wall_time_s"})},
      {"seed", summary_text(run, {"seed"})},
      {"git revision", revision},
      {"backend", backend}};
  rows.insert(rows.end(), figures.begin(), figures.end());
  // Runs written before these were recorded have neither: no empty rows for them.
  if (const std::string cpu = summary_text(run, {"machine", "cpu"}); !cpu.empty()) {
    rows.push_back({"machine", cpu + ", " + summary_text(run, {"machine", "logical_cores"}) +
                                   " logical cores, " +
                                   summary_text(run, {"machine", "runtime"})});
  }
  if (const std::string date = summary_text(run, {"date"}); !date.empty()) {
    rows.push_back({"finished (UTC)", date});
  }
  if (s.contains("faults") && s["faults"].is_object()) {
    std::string faults;
    for (const auto& [key, value] : flatten_json(s["faults"])) {
      if (value.is_array() && value.empty()) continue;  // e.g. the MPI-only list, in one process
      faults += (faults.empty() ? "" : ", ") + key + " " + json_label(value);
    }
    rows.push_back({"faults", faults});
  }
  return out + kv_table(rows);
}

std::string accuracy_section(const RunResults& run) {
  if (run.node_epochs.empty() && run.epochs.empty()) {
    return nothing_yet_note("metrics.csv", "epochs.csv", "accuracy per epoch");
  }
  LineChart chart;
  chart.title = "Test accuracy per epoch";
  chart.width = 900;
  chart.height = 400;
  chart.x = integer_axis("epoch");
  chart.y = axis("test accuracy (%)");
  const int nodes = run.num_nodes();
  const bool node_legend = nodes <= 10;
  for (int node = 0; node < nodes && !run.node_epochs.empty(); ++node) {
    LineSeries s;
    s.name = "node " + std::to_string(node);
    for (const NodeEpoch& row : run.node_epochs) {
      if (row.node != node) continue;
      s.x.push_back(row.epoch);
      s.y.push_back(row.test_accuracy);
    }
    s.color = palette_color(node);
    s.stroke_width = 1;
    s.in_legend = node_legend;
    s.css_class = "node-line";
    chart.series.push_back(std::move(s));
  }
  if (!node_legend) chart.notes.push_back("thin lines: the " + std::to_string(nodes) + " nodes");
  if (!run.epochs.empty()) {
    LineSeries mean = line_series("nodes mean"), average = line_series("averaged model");
    for (const EpochSummary& e : run.epochs) {
      mean.x.push_back(e.epoch);
      mean.y.push_back(e.mean_accuracy);
      average.x.push_back(e.epoch);
      average.y.push_back(e.average_model_accuracy);
    }
    mean.color = "#555";
    mean.stroke_width = 2.5;
    mean.dashed = true;
    mean.css_class = "mean-line";
    average.color = "#111";
    average.stroke_width = 3.5;
    average.markers = true;
    average.css_class = "average-line";
    // Runs with eval.per_node = false leave the nodes' mean empty (NaN): no line for it.
    if (std::any_of(mean.y.begin(), mean.y.end(), [](double v) { return std::isfinite(v); })) {
      chart.series.push_back(std::move(mean));
    }
    chart.series.push_back(std::move(average));
  }
  std::string out = render_line_chart(chart);
  if (run.node_epochs.empty()) {
    const bool absent =
        std::find(run.missing.begin(), run.missing.end(), "metrics.csv") != run.missing.end();
    out += absent ? missing_note("metrics.csv", "per-node accuracy lines")
                  : "<p class=\"missing\">metrics.csv has no rows (nodes' own models are "
                    "evaluated only with eval.per_node = true): no per-node accuracy lines.</p>\n";
  }
  if (run.epochs.empty()) out += no_rows_note(run, "epochs.csv", "averaged-model and mean lines");
  return out;
}

std::string bytes_section(const RunResults& run) {
  // The final cumulative bytes per node: the last epoch of metrics.csv, else summary.json.
  std::vector<double> mb;
  if (!run.node_epochs.empty()) {
    int last = 0;
    for (const auto& row : run.node_epochs) last = std::max(last, row.epoch);
    mb.assign(run.num_nodes(), 0);
    for (const auto& row : run.node_epochs) {
      if (row.epoch == last) mb[row.node] = row.bytes_sent / kBytesPerMb;
    }
  } else if (run.summary) {
    const json& final = (*run.summary).value("final", json::object());
    if (final.contains("bytes_sent_per_node") && final["bytes_sent_per_node"].is_array()) {
      for (const json& v : final["bytes_sent_per_node"]) {
        mb.push_back(v.is_number() ? v.get<double>() / kBytesPerMb : 0);
      }
    }
  }
  std::vector<std::string> figures;
  if (!mb.empty()) {
    BarChart bars;
    bars.title = "Bytes sent per node (total)";
    bars.x_label = "node";
    bars.y = axis("MB sent (1 MB = 1e6 bytes)");
    for (std::size_t i = 0; i < mb.size(); ++i) bars.categories.push_back(std::to_string(i));
    bars.series.push_back({"MB sent", mb, palette_color(0)});
    bars.legend = false;
    figures.push_back(render_bar_chart(bars));
  }
  if (!run.epochs.empty()) {
    LineChart line;
    line.title = "Cumulative MB sent per node (mean) per epoch";
    line.x = integer_axis("epoch");
    line.y = axis("MB sent per node");
    line.y.min = 0;
    LineSeries s = line_series("mean over nodes");
    for (const auto& e : run.epochs) {
      s.x.push_back(e.epoch);
      s.y.push_back(e.mean_gb_sent_per_node * 1e9 / kBytesPerMb);
    }
    s.markers = true;
    line.series.push_back(std::move(s));
    figures.push_back(render_line_chart(line));
  }
  if (figures.empty()) return nothing_yet_note("metrics.csv", "summary.json", "bytes sent per node");
  return figure_row(figures);
}

std::string consensus_section(const RunResults& run) {
  if (run.epochs.empty()) return no_rows_note(run, "epochs.csv", "consensus distance per epoch");
  LineChart chart;
  chart.title = "Consensus distance per epoch (mean_i ||x_i - x_bar||^2)";
  chart.x = integer_axis("epoch");
  LineSeries s = line_series("consensus distance");
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& e : run.epochs) {
    s.x.push_back(e.epoch);
    s.y.push_back(e.consensus_distance);
    if (e.consensus_distance > 0) {
      lo = std::min(lo, e.consensus_distance);
      hi = std::max(hi, e.consensus_distance);
    }
  }
  s.markers = true;
  chart.y = axis("consensus distance");
  chart.y.log = hi > 0 && hi / lo > kLogAxisSpan;
  if (chart.y.log) chart.notes.push_back("log axis: the values span more than two decades");
  chart.series.push_back(std::move(s));
  return render_line_chart(chart);
}

// layers.csv drawn against depth: x is a parameter tensor's position in the model, one line per
// evaluated epoch (at most kLayerEpochLines of them, evenly spaced, the last always).
constexpr std::size_t kLayerEpochLines = 6;
// The layers named under the chart: the ones whose nodes disagree most at the last epoch.
constexpr std::size_t kLayersNamed = 3;

std::string layers_section(const RunResults& run) {
  if (run.layer_epochs.empty()) {
    return no_rows_note(run, "layers.csv", "consensus distance per layer");
  }
  std::vector<int> epochs;
  for (const LayerEpoch& row : run.layer_epochs) {
    if (std::find(epochs.begin(), epochs.end(), row.epoch) == epochs.end()) {
      epochs.push_back(row.epoch);
    }
  }
  std::vector<int> drawn;
  for (std::size_t i = 0; i < kLayerEpochLines && i < epochs.size(); ++i) {
    const std::size_t pick =
        epochs.size() <= kLayerEpochLines ? i : i * (epochs.size() - 1) / (kLayerEpochLines - 1);
    drawn.push_back(epochs[pick]);
  }
  const auto chart_of = [&](const std::string& title, const std::string& label,
                            double LayerEpoch::*value) {
    LineChart chart;
    chart.title = title;
    chart.width = 900;
    chart.x = integer_axis("parameter tensor (model order)");
    chart.y = axis(label);
    double lo = std::numeric_limits<double>::infinity(), hi = 0;
    for (std::size_t e = 0; e < drawn.size(); ++e) {
      LineSeries s = line_series("epoch " + std::to_string(drawn[e]));
      int position = 0;
      for (const LayerEpoch& row : run.layer_epochs) {
        if (row.epoch != drawn[e]) continue;
        s.x.push_back(position++);
        s.y.push_back(row.*value);
        if (row.*value > 0) {
          lo = std::min(lo, row.*value);
          hi = std::max(hi, row.*value);
        }
      }
      s.color = palette_color(e);
      s.markers = s.x.size() <= 30;
      s.css_class = "layer-line";
      chart.series.push_back(std::move(s));
    }
    // A log axis needs positive values: zeros (nodes that agree exactly) would leave it.
    bool any_zero = false;
    for (const LayerEpoch& row : run.layer_epochs) any_zero = any_zero || !(row.*value > 0);
    chart.y.log = !any_zero && hi > 0 && hi / lo > kLogAxisSpan;
    if (chart.y.log) chart.notes.push_back("log axis: the values span more than two decades");
    return chart;
  };
  LineChart relative = chart_of("Relative consensus distance per layer (sqrt(distance) / mean node norm)",
                                "relative distance", &LayerEpoch::relative_distance);
  std::vector<const LayerEpoch*> last;
  for (const LayerEpoch& row : run.layer_epochs) {
    if (row.epoch == epochs.back()) last.push_back(&row);
  }
  std::stable_sort(last.begin(), last.end(), [](const LayerEpoch* a, const LayerEpoch* b) {
    return a->relative_distance > b->relative_distance;
  });
  std::string most = "most apart at epoch " + std::to_string(epochs.back()) + ":";
  for (std::size_t i = 0; i < kLayersNamed && i < last.size(); ++i) {
    most += (i ? ", " : " ") + last[i]->layer + " (" + format_number(last[i]->relative_distance) + ")";
  }
  relative.notes.push_back(most);
  const LineChart norms = chart_of("Mean node weight norm per layer (mean_i ||x_i,s||)",
                                   "norm", &LayerEpoch::mean_node_norm);
  return figure_row({render_line_chart(relative), render_line_chart(norms)});
}

// Beyond this many nodes the per-node bars are drawn for the first ones only (each bar would be
// under a pixel wide, and 10 classes x 1,024 nodes made 1.2 MB of the page), and every node is
// summarised by how much of its data its largest class holds.
constexpr std::size_t kNodesDrawnOneByOne = 64;
constexpr int kShareBins = 10;

// Stacked bars of samples per class for nodes [0, shown).
std::string per_node_class_chart(const RunResults& run, std::size_t classes, std::size_t shown) {
  const std::size_t nodes = run.class_counts.size();
  BarChart chart;
  chart.title = shown < nodes ? "Training samples per node and class, nodes 0-" +
                                    std::to_string(shown - 1) + " of " + std::to_string(nodes)
                              : "Training samples per node and class";
  chart.width = 900;
  chart.x_label = "node";
  chart.y = axis("training samples");
  for (std::size_t node = 0; node < shown; ++node) chart.categories.push_back(std::to_string(node));
  for (std::size_t c = 0; c < classes; ++c) {
    BarSeries s{"class " + std::to_string(c), {}, palette_color(c)};
    for (std::size_t node = 0; node < shown; ++node) {
      const auto& counts = run.class_counts[node];
      s.values.push_back(c < counts.size() ? counts[c] : 0);
    }
    chart.series.push_back(std::move(s));
  }
  if (shown < nodes) {
    chart.notes.push_back("every node's counts: class_histogram.csv; every node's skew: the next "
                          "chart");
  }
  return render_bar_chart(chart);
}

// Every node in one of kShareBins bins of its largest class's share of its samples (1/classes
// for a node holding every class alike, 1 for a node holding one class), stacked by that class.
std::string largest_class_share_chart(const RunResults& run, std::size_t classes) {
  std::vector<std::vector<double>> nodes_in_bin(classes, std::vector<double>(kShareBins, 0));
  std::size_t empty_nodes = 0;
  for (const auto& counts : run.class_counts) {
    double total = 0;
    std::size_t largest = 0;
    for (std::size_t c = 0; c < counts.size(); ++c) {
      total += counts[c];
      if (counts[c] > counts[largest]) largest = c;  // ties: the lowest class
    }
    if (counts.empty() || total <= 0) {
      ++empty_nodes;
      continue;
    }
    const double share = counts[largest] / total;
    const int bin = std::min(kShareBins - 1, static_cast<int>(share * kShareBins));
    nodes_in_bin[largest][bin] += 1;
  }
  BarChart chart;
  chart.title = "Nodes by their largest class's share of their samples, all " +
                std::to_string(run.class_counts.size()) + " nodes";
  chart.width = 900;
  chart.x_label = "largest class's share of the node's training samples (%)";
  chart.y = axis("nodes");
  const int bin_percent = 100 / kShareBins;
  for (int b = 0; b < kShareBins; ++b) {
    chart.categories.push_back(std::to_string(b * bin_percent) + "-" +
                               std::to_string((b + 1) * bin_percent));
  }
  for (std::size_t c = 0; c < classes; ++c) {
    chart.series.push_back(
        {"largest: class " + std::to_string(c), std::move(nodes_in_bin[c]), palette_color(c)});
  }
  if (empty_nodes > 0) {
    chart.notes.push_back(empty_nodes == 1 ? std::string("1 node holds no training samples")
                                           : std::to_string(empty_nodes) +
                                                 " nodes hold no training samples");
  }
  return render_bar_chart(chart);
}

std::string classes_section(const RunResults& run) {
  if (!run.has("class_histogram.csv")) {
    return missing_note("class_histogram.csv", "class distribution per node");
  }
  std::size_t classes = 0;
  for (const auto& counts : run.class_counts) classes = std::max(classes, counts.size());
  const std::size_t nodes = run.class_counts.size();
  if (nodes <= kNodesDrawnOneByOne) return per_node_class_chart(run, classes, nodes);
  return per_node_class_chart(run, classes, kNodesDrawnOneByOne) +
         largest_class_share_chart(run, classes);
}

std::string topology_section(const RunResults& run) {
  if (!run.topology) {
    std::string out = missing_note("topology.json", "topology plot");
    const std::string label = summary_text(run, {"topology", "label"});
    if (!label.empty()) {
      out += "<p class=\"note\">summary.json: " + xml_escape(label) + ", spectral gap " +
             xml_escape(summary_text(run, {"topology", "spectral_gap"})) + "</p>\n";
    }
    return out;
  }
  const TopologyInfo& topo = *run.topology;
  const auto drawing = [](const TopologyInfo& g, const std::string& title,
                          const std::string& id_prefix) {
    GraphDrawing graph;
    graph.title = title;
    graph.num_nodes = g.num_nodes;
    graph.id_prefix = id_prefix;
    if (g.num_nodes > 16) graph.width = graph.height = 640;  // room for the arcs of many nodes
    for (const auto& e : g.edges) graph.edges.push_back({e.src, e.dst, e.weight});
    return render_graph(graph);
  };
  const std::string title =
      topo.name + ", " + std::to_string(topo.num_nodes) + " nodes" +
      (topo.spectral_gap ? ", spectral gap " + format_number(*topo.spectral_gap) : "");
  if (topo.steps.empty()) return drawing(topo, title, "topology");
  // A time-varying topology: its period's graphs in turn (one-peer-exponential's period is
  // log2 of the node count, at most 12 graphs).
  std::string out = "<p class=\"note\">" + xml_escape(title) + ": the graph changes every step, " +
                    std::to_string(topo.steps.size()) + " graphs in turn</p>\n";
  for (std::size_t i = 0; i < topo.steps.size(); ++i) {
    const TopologyInfo& step = topo.steps[i];
    out += drawing(step,
                   "step " + std::to_string(i) + " of each period: " + step.name +
                       (step.spectral_gap ? ", spectral gap " + format_number(*step.spectral_gap)
                                          : ""),
                   "topology-step" + std::to_string(i));
  }
  return out;
}

std::string ratio(double a, double b) {
  return b > 0 && std::isfinite(a / b) ? format_number(a / b) + "x" : "-";
}

std::string cost_section(const RunResults& run) {
  if (!run.cost) {
    const std::string arch = config_text(run, "model", "arch");
    if (arch == "transformer" || arch == "distilbert") {
      return "<p class=\"missing\">No memory and energy per precision: the cost model (cost.json) "
             "covers the image models, not " + xml_escape(arch) + ".</p>\n";
    }
    return missing_note("cost.json", "memory and energy per precision");
  }
  const CostInfo& cost = *run.cost;
  // Memory: a stacked bar per (phase, precision); parts in the paper's order, then any others.
  std::vector<std::string> parts = {"weights", "activations", "gradients", "optimizer",
                                    "communication"};
  for (const auto& p : cost.precisions) {
    for (const auto* phase : {&p.training, &p.inference}) {
      if (!*phase) continue;
      for (const auto& [name, mib] : (*phase)->memory_mib) {
        if (std::find(parts.begin(), parts.end(), name) == parts.end()) parts.push_back(name);
      }
    }
  }
  BarChart memory;
  memory.title = "Memory per node per iteration";
  memory.y = axis("MiB");
  memory.x_label = "precision and phase";
  for (std::size_t i = 0; i < parts.size(); ++i)
    memory.series.push_back({parts[i], {}, palette_color(i)});
  BarChart energy;
  energy.title = "Energy per iteration";
  energy.y = axis("mJ");
  energy.stacked = false;
  energy.categories = {"training", "inference"};
  std::vector<std::vector<std::string>> rows;
  const CostPrecision* reference = cost.precisions.empty() ? nullptr : &cost.precisions.front();
  for (const auto& p : cost.precisions) {
    if (p.precision == "fp32") reference = &p;
  }
  auto total = [](const CostPhase& phase) {
    if (phase.memory_total_mib) return *phase.memory_total_mib;
    double sum = 0;
    for (const auto& [name, mib] : phase.memory_mib) sum += mib;
    return sum;
  };
  for (const char* phase_name : {"training", "inference"}) {
    const bool training = std::string(phase_name) == "training";
    for (const auto& p : cost.precisions) {
      const auto& phase = training ? p.training : p.inference;
      if (!phase) continue;
      memory.categories.push_back(p.precision + " " + phase_name);
      for (std::size_t i = 0; i < parts.size(); ++i) {
        double v = 0;
        for (const auto& [name, mib] : phase->memory_mib) v += name == parts[i] ? mib : 0;
        memory.series[i].values.push_back(v);
      }
      memory.annotations.push_back(format_number(total(*phase)) + " MiB");
      const auto& ref = reference ? (training ? reference->training : reference->inference)
                                  : std::optional<CostPhase>();
      if (ref && &p != reference) {
        memory.notes.push_back(std::string(phase_name) + " memory " + reference->precision + "/" +
                               p.precision + " = " + ratio(total(*ref), total(*phase)));
      }
      rows.push_back({p.precision, phase_name, format_number(phase->adds),
                      format_number(phase->mults), format_number(phase->energy_mj),
                      format_number(total(*phase))});
    }
  }
  for (std::size_t i = 0; i < cost.precisions.size(); ++i) {
    const auto& p = cost.precisions[i];
    energy.series.push_back(
        {p.precision,
         {p.training ? p.training->energy_mj : 0, p.inference ? p.inference->energy_mj : 0},
         palette_color(i)});
  }
  if (reference) {
    for (const auto* phase : {&reference->training, &reference->inference}) {
      std::string note;
      for (const auto& p : cost.precisions) {
        const auto& other = phase == &reference->training ? p.training : p.inference;
        if (&p == reference || !other || !*phase) continue;
        note += (note.empty() ? "" : ", ") + reference->precision + "/" + p.precision + " = " +
                ratio((*phase)->energy_mj, other->energy_mj);
      }
      energy.annotations.push_back(note);
      if (!note.empty())
        energy.notes.push_back(
            std::string(phase == &reference->training ? "training" : "inference") + " energy " +
            note);
    }
  }
  std::string sub = "model " + cost.model + ", norm " + cost.norm + ", algorithm " +
                    cost.algorithm + ", energy table " + cost.energy_table;
  if (cost.batch_size) sub += ", batch size " + std::to_string(*cost.batch_size);
  return "<p class=\"note\">" + xml_escape(sub) + "</p>\n" +
         figure_row({render_bar_chart(memory), render_bar_chart(energy)}) +
         html_table({"precision", "phase", "adds", "mults", "energy (mJ)", "memory (MiB)"}, rows);
}

}  // namespace

std::string run_report_html(const RunResults& run) {
  std::string name = summary_text(run, {"config", "run", "name"});
  if (name.empty()) name = run.folder;
  std::string body = "<header>\n" + header_html(run) + "</header>\n";
  body += html_section("accuracy", "Test accuracy per epoch", accuracy_section(run));
  body += html_section("bytes", "Bytes sent", bytes_section(run));
  body += html_section("consensus", "Consensus distance", consensus_section(run));
  body += html_section("layers", "Consensus distance per layer", layers_section(run));
  body += html_section("classes", "Class distribution per node", classes_section(run));
  body += html_section("topology", "Topology", topology_section(run));
  body += html_section("cost", "Memory and energy per precision", cost_section(run));
  return html_page("lpdt run " + name, body);
}

}  // namespace lpdt::exp::report
