// The HTML report (exp/report/): the chart writer's value-to-pixel mapping, ticks, numbers and
// escaping; a synthetic run folder's page (every section, a line per node, bars per node and
// class, the topology's arcs, the cost bars and ratios, notes for missing files); a synthetic
// sweep's page (fp32 solid and int8 dashed in the skew plot, means over seeds at the right
// pixels, the tables, every run, the unfinished ones); clear errors for malformed files and
// folders that are neither a run nor a sweep.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "lpdt/core/error.h"
#include "lpdt/exp/report/report_page.h"
#include "lpdt/exp/report/run_results.h"
#include "lpdt/exp/report/svg_chart.h"
#include "lpdt/graph/export.h"
#include "lpdt/graph/factory.h"
#include "lpdt/graph/schedule.h"

namespace lpdt::exp::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::EndsWith;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// Pixel coordinates are written with 2 decimals.
constexpr double kPixelTolerance = 0.011;

// Every test's folders live under one folder per process, removed when the tests end.
const fs::path& test_root() {
  struct Root {
    fs::path path = fs::temp_directory_path() / ("lpdt_report_test_" + std::to_string(::getpid()));
    ~Root() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static const Root root;
  return root.path;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = test_root() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& file, const std::string& text) { std::ofstream(file) << text; }

std::string read(const fs::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

// The text of <section id="id"> ... </section>.
std::string section(const std::string& html, const std::string& id) {
  const auto begin = html.find("<section id=\"" + id + "\">");
  if (begin == std::string::npos) return "";
  return html.substr(begin, html.find("</section>", begin) - begin);
}

double attribute(const std::string& element, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(element, m, std::regex(" " + name + "=\"([-0-9.]+)\""))) return NAN;
  return std::stod(m[1]);
}

// The pixel of each tick label (class tick-x or tick-y) by its value.
std::map<double, double> ticks(const std::string& svg, const std::string& axis) {
  std::map<double, double> pixels;
  const std::regex tick("<text class=\"tick-" + axis + "\"([^>]*)>([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tick); it != std::sregex_iterator();
       ++it) {
    pixels[std::stod((*it)[2])] = attribute((*it)[1], axis);
  }
  return pixels;
}

// The pixel a value maps to, from the first and last tick (the axis is linear).
double pixel_of(const std::map<double, double>& ticks, double value) {
  const auto [v0, p0] = *ticks.begin();
  const auto [v1, p1] = *ticks.rbegin();
  return p0 + (value - v0) / (v1 - v0) * (p1 - p0);
}

// Every <svg> is closed and has width, height, viewBox and a <title>.
void expect_well_formed(const std::string& html) {
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
  const std::regex svg("<svg [^>]*>\\s*<title>");
  EXPECT_EQ(
      std::distance(std::sregex_iterator(html.begin(), html.end(), svg), std::sregex_iterator()),
      count(html, "<svg"));
  const std::regex sized("<svg [^>]*width=\"[0-9.]+\" height=\"[0-9.]+\" viewBox=\"0 0 ");
  EXPECT_EQ(
      std::distance(std::sregex_iterator(html.begin(), html.end(), sized), std::sregex_iterator()),
      count(html, "<svg"));
  EXPECT_EQ(count(html, "<section"), count(html, "</section>"));
  EXPECT_THAT(html, HasSubstr("</html>"));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  for (const char* external : {"src=", "href=\"http", "url(http", "@import"}) {
    EXPECT_THAT(html, Not(HasSubstr(external))) << "no external resources";
  }
}

// A run of `nodes` nodes and `epochs` epochs: node i's accuracy at epoch e is 10 i + e (mod 100).
struct SyntheticRun {
  int nodes = 4, epochs = 3, classes = 10;
  std::string name = "synthetic";
  std::string precision = "fp32";
  std::string algo = "choco";
  std::string message_values = "fp32";
  double skew = 0.5;
  int seed = 1;
  double accuracy = 50;  // final average-model accuracy
  bool summary = true;
  bool machine = true;  // summary.json's "machine" and "date" (runs before they were recorded: no)
};

void write_run(const fs::path& dir, const SyntheticRun& r) {
  fs::create_directories(dir);
  std::ostringstream metrics, epochs, histogram;
  metrics << "epoch,node,lr,train_loss,test_accuracy,bytes_sent\n";
  epochs << "epoch,lr,train_loss,mean_accuracy,min_accuracy,max_accuracy,average_model_accuracy,"
            "consensus_distance,mean_gb_sent_per_node,elapsed_s\n";
  for (int e = 1; e <= r.epochs; ++e) {
    for (int i = 0; i < r.nodes; ++i) {
      metrics << e << "," << i << ",0.1,1.5," << (10 * i + e) % 100 << "," << 1000000 * e * (i + 1) << "\n";
    }
    epochs << e << ",0.1,1.5," << 20 + e << ",10,30," << r.accuracy - r.epochs + e << ","
           << std::pow(10.0, -2 * e) << "," << 0.001 * e << "," << e << "\n";
  }
  histogram << "node";
  for (int c = 0; c < r.classes; ++c) histogram << ",class_" << c;
  histogram << "\n";
  for (int i = 0; i < r.nodes; ++i) {
    histogram << i;
    for (int c = 0; c < r.classes; ++c) histogram << "," << (c == i ? 100 : 5);
    histogram << "\n";
  }
  write(dir / "metrics.csv", metrics.str());
  write(dir / "epochs.csv", epochs.str());
  write(dir / "class_histogram.csv", histogram.str());
  // Three parameter tensors; at every epoch fc.weight disagrees most, then conv.weight.
  std::ostringstream layers;
  layers << "epoch,layer,numel,distance,relative_distance,mean_node_norm,average_norm\n";
  for (int e = 1; e <= r.epochs; ++e) {
    layers << e << ",conv.weight,100," << 0.01 * e << "," << 0.02 * e << "," << 5 * e << ",4\n";
    layers << e << ",norm.gamma,16,0.0001,0.001,4,4\n";
    layers << e << ",fc.weight,50," << 0.5 * e << "," << 0.3 * e << ",2,1.5\n";
  }
  write(dir / "layers.csv", layers.str());
  if (!r.summary) return;
  const json summary = {
      {"config",
       {{"algo",
        {{"name", r.algo},
         {"compressor", "none"},
         {"consensus_step", 1.0},
         {"message_values", r.message_values}}},
        {"model", {{"arch", "mlp"}, {"norm", "none"}, {"precision", r.precision}}},
        {"graph", {{"topology", "directed-ring"}, {"nodes", r.nodes}, {"mixing", "uniform"}}},
        {"data", {{"dataset", "synthetic"}, {"skew", r.skew}, {"partition", "skew"}}},
        {"run", {{"name", r.name}, {"seed", r.seed}, {"out_dir", dir.parent_path().string()}}}}},
      {"seed", r.seed},
      {"build", {{"git_revision", "abc123"}, {"version", "0.1.0"}}},
      {"backend", {{"engine", "node-batched"}, {"device", "cpu"}}},
      {"final",
       {{"average_model_accuracy", r.accuracy},
        {"mean_node_accuracy", r.accuracy - 5},
        {"mean_gb_sent_per_node", 0.003},
        {"node_accuracy", json::array()}}}};
  json with_machine = summary;
  if (r.machine) {
    with_machine["machine"] = {
        {"cpu", "Test CPU 9000"}, {"logical_cores", 2}, {"runtime", "2 intra-op threads"}};
    with_machine["date"] = "2026-01-02T03:04:05Z";
  }
  write(dir / "summary.json", with_machine.dump(2));
}

// Topology (a directed ring) and cost files of the run folder.
void write_topology_and_cost(const fs::path& dir, int nodes) {
  json edges = json::array();
  for (int i = 0; i < nodes; ++i)
    edges.push_back({{"src", i}, {"dst", (i + 1) % nodes}, {"weight", 0.5}});
  write(dir / "topology.json", json{{"name", "directed-ring"},
                                    {"num_nodes", nodes},
                                    {"spectral_gap", 0.29289},
                                    {"edges", edges},
                                    {"extra", "ignored"}}
                                   .dump());
  const auto phase = [](double scale, double energy) {
    return json{{"adds", 1e9},
                {"mults", 1e9},
                {"energy_mj", energy},
                {"memory_mib",
                 {{"weights", 1 * scale},
                  {"activations", 30 * scale},
                  {"gradients", 1 * scale},
                  {"optimizer", 1 * scale},
                  {"communication", 2 * scale},
                  {"total", 35 * scale}}}};
  };
  write(
      dir / "cost.json",
      json{
          {"model", "resnet20"},
          {"norm", "evonorm"},
          {"batch_size", 32},
          {"algorithm", "choco"},
          {"energy_table", {{"name", "horowitz-45nm"}}},
          {"precisions",
           {{{"precision", "fp32"}, {"training", phase(1, 8)}, {"inference", phase(0.5, 2)}},
            {{"precision", "int8"}, {"training", phase(0.25, 2)}, {"inference", phase(0.125, 1)}}}}}
          .dump());
}

TEST(ReportChart, MapsValuesToPixelsOnLinearAndLogAxes) {
  LineChart chart;
  chart.title = "t";
  chart.x = axis("x");
  chart.x.min = 0;
  chart.x.max = 1;
  chart.y = axis("accuracy (%)");
  chart.y.min = 0;
  chart.y.max = 100;
  LineSeries s = line_series("s");
  s.x = {0.5, 1};
  s.y = {50, 100};
  s.markers = true;
  chart.series.push_back(s);
  const std::string svg = render_line_chart(chart);
  std::smatch area;
  ASSERT_TRUE(std::regex_search(svg, area, std::regex("<rect class=\"plot-area\"[^>]*>")));
  const double left = attribute(area[0], "x"), top = attribute(area[0], "y");
  const double width = attribute(area[0], "width"), height = attribute(area[0], "height");
  ASSERT_GT(width, 0);
  ASSERT_GT(height, 0);
  std::vector<std::pair<double, double>> points;
  const std::regex circle("<circle class=\"pt\"[^>]*>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), circle); it != std::sregex_iterator();
       ++it) {
    points.emplace_back(attribute((*it)[0], "cx"), attribute((*it)[0], "cy"));
  }
  ASSERT_EQ(points.size(), 2u);
  EXPECT_NEAR(points[0].first, left + width / 2, kPixelTolerance);
  EXPECT_NEAR(points[0].second, top + height / 2, kPixelTolerance) << "50 on a 0-100 axis";
  EXPECT_NEAR(points[1].first, left + width, kPixelTolerance);
  EXPECT_NEAR(points[1].second, top, kPixelTolerance) << "100 at the top";
  EXPECT_EQ(ticks(svg, "y").size(), 6u) << "0, 20, ..., 100";

  // Log axis: 10 halfway between 1 and 100, whatever the pixel range.
  const Scale log_scale(1, 100, 300, 100, true);
  EXPECT_NEAR(log_scale(10), 200, 1e-9);
  EXPECT_NEAR(log_scale(1), 300, 1e-9);
  EXPECT_TRUE(std::isnan(log_scale(0))) << "not positive: no point on a log axis";
  EXPECT_EQ(Scale(1e-4, 10, 0, 1, true).ticks(),
            (std::vector<double>{1e-4, 1e-3, 1e-2, 1e-1, 1, 10}));
}

TEST(ReportChart, NiceRangesTicksAndCompactNumbers) {
  EXPECT_EQ(nice_range(9.95, 19.8, false), std::make_pair(8.0, 20.0));
  EXPECT_EQ(nice_range(0.003, 0.7, true), std::make_pair(0.001, 1.0));
  EXPECT_EQ(nice_range(1, 2, false, true), std::make_pair(1.0, 2.0));
  // A constant series of zeros (a one-node run's consensus distance) starts at 0, not -1.
  EXPECT_EQ(nice_range(0, 0, false).first, 0.0);
  EXPECT_GT(nice_range(0, 0, false).second, 0.0);
  EXPECT_LT(nice_range(5, 5, false).first, 5.0);
  // 60 decades: every 8th power of ten, so about 8 labels instead of 61.
  const std::vector<double> wide = Scale(1e-30, 1e30, 0, 1, true).ticks();
  EXPECT_EQ(wide.size(), 7u);
  for (const double v : wide) {
    EXPECT_EQ(static_cast<int>(std::round(std::log10(v))) % 8, 0) << v;
  }
  EXPECT_EQ(Scale(1, 2, 0, 1, false, true).ticks(), (std::vector<double>{1, 2}));
  EXPECT_EQ(Scale(0, 1, 0, 1, false).ticks(), (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1}));
  EXPECT_EQ(format_number(12546176), "1.255e7");
  EXPECT_EQ(format_number(0.5), "0.5");
  EXPECT_EQ(format_number(100), "100");
  EXPECT_EQ(format_number(1e-5), "1e-5");
  EXPECT_EQ(format_number(-0.0), "0");
  EXPECT_EQ(format_coordinate(12.5), "12.5");
  EXPECT_EQ(format_coordinate(3.14159), "3.14");
  EXPECT_NE(palette_color(0), palette_color(1));
  EXPECT_EQ(palette_color(0), palette_color(10));
}

TEST(ReportChart, EscapesEveryText) {
  EXPECT_EQ(xml_escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
  BarChart bars;
  bars.title = "<bytes> & co";
  bars.categories = {"n<0>"};
  bars.series.push_back({"s\"1\"", {3}, ""});
  const std::string svg = render_bar_chart(bars);
  EXPECT_THAT(svg, HasSubstr("&lt;bytes&gt; &amp; co"));
  EXPECT_THAT(svg, HasSubstr("n&lt;0&gt;"));
  EXPECT_THAT(svg, HasSubstr("s&quot;1&quot;"));
  EXPECT_THAT(svg, Not(HasSubstr("<bytes>")));
  EXPECT_THAT(svg, Not(HasSubstr("n<0>")));
}

TEST(ReportRun, PageHasEverySectionALinePerNodeAndEscapedText) {
  const fs::path dir = fresh_dir("run") / "run-1";
  SyntheticRun r;
  r.nodes = 5;
  r.name = "x<y & \"z\"";
  write_run(dir, r);
  write_topology_and_cost(dir, r.nodes);
  const fs::path path = write_report(dir);
  EXPECT_EQ(path, dir / "report.html");
  const std::string html = read(path);
  expect_well_formed(html);
  for (const char* id :
       {"accuracy", "bytes", "consensus", "layers", "classes", "topology", "cost"}) {
    EXPECT_THAT(section(html, id), HasSubstr("<svg")) << id;
    EXPECT_THAT(section(html, id), Not(HasSubstr("class=\"missing\""))) << id;
  }
  EXPECT_THAT(html, HasSubstr("x&lt;y &amp; &quot;z&quot;"));
  EXPECT_THAT(html, Not(HasSubstr("x<y")));
  EXPECT_THAT(html, HasSubstr("abc123"));
  EXPECT_THAT(html, HasSubstr("Test CPU 9000, 2 logical cores, 2 intra-op threads"));
  EXPECT_THAT(html, HasSubstr("2026-01-02T03:04:05Z"));

  const std::string accuracy = section(html, "accuracy");
  EXPECT_EQ(count(accuracy, "node-line"), r.nodes);
  EXPECT_EQ(count(accuracy, "average-line"), 1);
  EXPECT_EQ(count(accuracy, "mean-line"), 1);
  // Node 2's last point (accuracy 10 * 2 + 3 = 23) at the y tick mapping.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(accuracy, m,
                                std::regex("<path class=\"line node-line\" d=\"([^\"]*)\"[^>]*>"
                                           "<title>node 2</title>")));
  const std::string d = m[1];
  const double last_y = std::stod(d.substr(d.rfind(' ') + 1));
  EXPECT_NEAR(last_y, pixel_of(ticks(accuracy, "y"), 23), kPixelTolerance);

  EXPECT_EQ(count(section(html, "bytes"), "class=\"bar\""), r.nodes);
  EXPECT_THAT(section(html, "bytes"), HasSubstr("4, MB sent: 15")) << "node 4: 5 MB x 3 epochs";
  EXPECT_EQ(count(section(html, "classes"), "class=\"bar\""), r.nodes * r.classes);
  EXPECT_EQ(count(section(html, "classes"), "<rect x="), r.classes) << "a legend box per class";
  EXPECT_THAT(section(html, "consensus"), HasSubstr("log axis")) << "1e-2 .. 1e-6";
  // Per layer: two charts (relative distance, norm), a line per epoch in each, the layers most
  // apart at the last epoch named in order.
  const std::string layers = section(html, "layers");
  EXPECT_EQ(count(layers, "<svg"), 2);
  EXPECT_EQ(count(layers, "layer-line"), 2 * r.epochs);
  EXPECT_TRUE(std::regex_search(
      layers, std::regex("most apart at epoch 3: fc.weight \\([0-9.]+\\), conv.weight "
                         "\\([0-9.]+\\), norm.gamma")))
      << layers;
  EXPECT_THAT(layers, HasSubstr("log axis")) << "relative distances 0.001 .. 0.9";
  EXPECT_EQ(count(section(html, "topology"), "class=\"edge\""), r.nodes);
  EXPECT_EQ(count(section(html, "topology"), "marker-end=\"url(#topology-arrow)\""), r.nodes);
  EXPECT_THAT(section(html, "topology"), HasSubstr("directed-ring, 5 nodes, spectral gap 0.2929"));
  const std::string cost = section(html, "cost");
  EXPECT_EQ(count(cost, "class=\"bar\""), 4 * 5 + 2 * 2) << "4 stacks of 5 parts, 2x2 energy";
  EXPECT_THAT(cost, HasSubstr("fp32/int8 = 4x")) << "training energy 8 / 2";
  EXPECT_THAT(cost, HasSubstr(">8.75 MiB<")) << "int8 training memory above its bar";
  EXPECT_THAT(cost, HasSubstr("training memory fp32/int8 = 4x")) << "35 / 8.75";
  EXPECT_THAT(cost, HasSubstr("inference memory fp32/int8 = 4x")) << "17.5 / 4.375";
}

TEST(ReportRun, ARunWithoutMachineOrDateHasNoRowsForThem) {
  const fs::path dir = fresh_dir("no-machine") / "run";
  SyntheticRun r;
  r.machine = false;
  write_run(dir, r);
  const std::string html = read(write_report(dir));
  expect_well_formed(html);
  EXPECT_THAT(html, HasSubstr("abc123"));
  EXPECT_THAT(html, Not(HasSubstr(">machine<")));
  EXPECT_THAT(html, Not(HasSubstr("finished (UTC)")));
}

// Beyond 64 nodes the per-node bars stop at node 63 and every node lands in a bin of its largest
// class's share: nodes 0-69 hold 95% of one class (i mod 10), nodes 70-98 hold 25 of 115 in class
// 3, node 99 holds nothing.
TEST(ReportRun, ManyNodesAreSummarisedByTheirLargestClassesShare) {
  const fs::path dir = fresh_dir("many-nodes") / "run";
  SyntheticRun r;
  r.nodes = 100;
  write_run(dir, r);
  std::ostringstream histogram;
  histogram << "node";
  for (int c = 0; c < r.classes; ++c) histogram << ",class_" << c;
  histogram << "\n";
  for (int i = 0; i < r.nodes; ++i) {
    histogram << i;
    for (int c = 0; c < r.classes; ++c) {
      const int count = i < 70 ? (c == i % 10 ? 95 : c == (i + 1) % 10 ? 5 : 0)
                        : i < 99 ? (c == 3 ? 25 : 10)
                                 : 0;
      histogram << "," << count;
    }
    histogram << "\n";
  }
  write(dir / "class_histogram.csv", histogram.str());
  const std::string html = read(write_report(dir));
  expect_well_formed(html);
  const std::string classes = section(html, "classes");
  EXPECT_EQ(count(classes, "<svg"), 2);
  EXPECT_THAT(classes, HasSubstr("nodes 0-63 of 100"));
  EXPECT_THAT(classes, HasSubstr("<title>63, class 4: 5</title>"));
  EXPECT_THAT(classes, Not(HasSubstr("<title>64, class")));
  EXPECT_EQ(count(classes, "class=\"bar\""), 64 * r.classes + 10 * r.classes);
  for (int c = 0; c < r.classes; ++c) {
    EXPECT_THAT(classes, HasSubstr("<title>90-100, largest: class " + std::to_string(c) +
                                   ": 7</title>"));
  }
  EXPECT_THAT(classes, HasSubstr("<title>20-30, largest: class 3: 29</title>"));
  EXPECT_THAT(classes, HasSubstr("<title>20-30, largest: class 4: 0</title>"));
  EXPECT_THAT(classes, HasSubstr("1 node holds no training samples"));
}

TEST(ReportRun, AFewNodesKeepTheirBarsAndNoShareChart) {
  const fs::path dir = fresh_dir("few-nodes") / "run";
  SyntheticRun r;
  r.nodes = 64;
  write_run(dir, r);
  const std::string classes = section(read(write_report(dir)), "classes");
  EXPECT_EQ(count(classes, "<svg"), 1);
  EXPECT_EQ(count(classes, "class=\"bar\""), r.nodes * r.classes);
  EXPECT_THAT(classes, HasSubstr("<title>63, class 0: 5</title>"));
}

TEST(ReportRun, MissingOptionalFilesLeaveANoteInsteadOfTheirSection) {
  const fs::path dir = fresh_dir("missing") / "run";
  SyntheticRun r;
  r.summary = false;
  write_run(dir, r);
  fs::remove(dir / "class_histogram.csv");
  fs::remove(dir / "layers.csv");
  const fs::path out = dir.parent_path() / "page.html";
  EXPECT_EQ(write_report(dir, out), out);
  const std::string html = read(out);
  expect_well_formed(html);
  EXPECT_THAT(html, HasSubstr("summary.json is missing"));
  for (const auto& [id, file] :
       std::map<std::string, std::string>{{"classes", "class_histogram.csv"},
                                          {"layers", "layers.csv"},
                                          {"topology", "topology.json"},
                                          {"cost", "cost.json"}}) {
    EXPECT_THAT(section(html, id), HasSubstr(file + " is missing")) << id;
    EXPECT_THAT(section(html, id), Not(HasSubstr("<svg"))) << id;
  }
  EXPECT_EQ(count(section(html, "accuracy"), "node-line"), r.nodes);

  // A run without per-node evaluation has metrics.csv with its header only: said so, not
  // "missing".
  write(dir / "metrics.csv", "epoch,node,lr,train_loss,test_accuracy,bytes_sent\n");
  EXPECT_EQ(write_report(dir, out), out);
  const std::string header_only = read(out);
  EXPECT_THAT(section(header_only, "accuracy"), HasSubstr("metrics.csv has no rows"));
  EXPECT_THAT(header_only, Not(HasSubstr("metrics.csv is missing")));
  // Both tables with their headers only (a run in its first epoch): said so, in one sentence.
  const std::string epochs = read(dir / "epochs.csv");
  write(dir / "epochs.csv", epochs.substr(0, epochs.find('\n') + 1));
  EXPECT_EQ(write_report(dir, out), out);
  EXPECT_THAT(section(read(out), "accuracy"),
              HasSubstr("No accuracy per epoch: metrics.csv and epochs.csv are missing or hold "
                        "no rows yet."));
  // ...and the consensus section says the same of epochs.csv, not that it is missing.
  EXPECT_THAT(section(read(out), "consensus"), HasSubstr("epochs.csv has no rows yet"));
  EXPECT_THAT(read(out), Not(HasSubstr("epochs.csv is missing")));
  // A run that stopped diverged says so, with diverged.json's epoch and message, not that it has
  // not finished.
  // Its header describes the experiment from diverged.json's configuration (it read summary.json,
  // which the run does not have).
  write(dir / "diverged.json",
        "{\"config\": {\"algo\": {\"name\": \"choco\", \"consensus_step\": 0.5}, \"model\": "
        "{\"arch\": \"transformer\"}}, \"epoch\": 2, \"step\": 7, \"nodes\": [1], "
        "\"message\": \"the training loss of node 1 is nan\"}");
  EXPECT_EQ(write_report(dir, out), out);
  const std::string diverged = read(out);
  expect_well_formed(diverged);
  EXPECT_THAT(diverged, AllOf(HasSubstr("The run stopped diverged in epoch 2: the training loss "
                                        "of node 1 is nan (diverged.json)"),
                              Not(HasSubstr("the run has not finished")),
                              HasSubstr("<td>choco, consensus step 0.5</td>")));
  // A text model has no cost model: said so, not that cost.json is missing.
  EXPECT_THAT(section(diverged, "cost"), HasSubstr("covers the image models, not transformer"));
}

// A run with eval.per_node = false has null node figures: the header says they were not
// evaluated (it printed "- [null, null]"), and leaves empty lists out of the faults row.
TEST(ReportRun, NodeFiguresNotEvaluatedAreSaidSo) {
  const fs::path dir = fresh_dir("not-per-node") / "run";
  write_run(dir, SyntheticRun{});
  json summary = json::parse(read(dir / "summary.json"));
  for (const char* key : {"mean_node_accuracy", "min_node_accuracy", "max_node_accuracy"}) {
    summary["final"][key] = nullptr;
  }
  summary["faults"] = {{"dead_edge_rounds", 9}, {"bytes_as_last_reported_by_ranks", json::array()}};
  write(dir / "summary.json", summary.dump(2));
  const std::string html = read(write_report(dir));
  EXPECT_THAT(html, HasSubstr("<td>not evaluated (eval.per_node = false)</td>"));
  EXPECT_THAT(html, Not(HasSubstr("null")));
  EXPECT_THAT(html, AllOf(HasSubstr("dead_edge_rounds 9"),
                          Not(HasSubstr("bytes_as_last_reported_by_ranks"))));
}

std::string report_error(const fs::path& dir) {
  try {
    write_report(dir);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ReportRun, MalformedFilesAreErrorsNamingFileLineAndExpectation) {
  const fs::path dir = fresh_dir("malformed") / "run";
  write_run(dir, SyntheticRun{});
  write(dir / "metrics.csv",
        "epoch,node,lr,train_loss,test_accuracy,bytes_sent\n1,0,0.1,1.5,10,100\n1,1,0.1,1.5,10\n");
  std::string error = report_error(dir);
  EXPECT_THAT(error, HasSubstr("metrics.csv' line 3: 5 columns, expected 6"));
  EXPECT_THAT(error, HasSubstr("epoch,node,lr,train_loss,test_accuracy,bytes_sent"));

  write(dir / "metrics.csv",
        "epoch,node,lr,train_loss,test_accuracy,bytes_sent\n1,0,0.1,1.5,high,1\n");
  EXPECT_THAT(report_error(dir), HasSubstr("metrics.csv' line 2, column test_accuracy: 'high' is "
                                           "not a number"));
  write(dir / "metrics.csv",
        "epoch,node,lr,train_loss,test_accuracy,bytes_sent\n1,0,0.1,1e400,1,1\n");
  EXPECT_THAT(report_error(dir), HasSubstr("'1e400' is beyond the range of a double"));
  write(dir / "metrics.csv", "epoch,node,accuracy\n1,0,3\n");
  EXPECT_THAT(report_error(dir), HasSubstr("lacks column 'test_accuracy'"));
  // A last line cut short: its last number would read as another (bytes 15682720 as 1568).
  write(
      dir / "metrics.csv",
      "epoch,node,lr,train_loss,test_accuracy,bytes_sent\n1,0,0.1,1.5,10,100\n1,1,0.1,1.5,10,1568");
  EXPECT_THAT(report_error(dir), HasSubstr("metrics.csv' line 3: the file ends in the middle of "
                                           "this line (no newline after '1,1,0.1,1.5,10,1568')"));
  // A node the run does not have (the synthetic run has 4).
  write(
      dir / "metrics.csv",
      "epoch,node,lr,train_loss,test_accuracy,bytes_sent\n1,0,0.1,1.5,10,100\n1,99,0.1,1.5,10,1\n");
  EXPECT_THAT(report_error(dir), HasSubstr("metrics.csv': node 99 in epoch 1, but the run has 4 "
                                           "nodes"));

  write_run(dir, SyntheticRun{});
  write(dir / "layers.csv", "epoch,layer,numel,distance\n1,fc.weight,50,0.5\n");
  EXPECT_THAT(report_error(dir), HasSubstr("layers.csv' line 1: the header lacks column 'relative_distance'"));

  write_run(dir, SyntheticRun{});
  write(dir / "summary.json", "{\"config\": ");
  // The line and column, without the JSON library's exception name.
  EXPECT_THAT(report_error(dir), AllOf(HasSubstr("summary.json' is not valid JSON (line 1, column"),
                                       Not(HasSubstr("json.exception"))));
  // Something else than a file under a run file's name is named, not taken for a missing file
  // (a folder) or reported as the library's "filesystem error" (a symbolic link loop).
  write_run(dir, SyntheticRun{});
  fs::remove(dir / "metrics.csv");
  fs::create_directory(dir / "metrics.csv");
  EXPECT_THAT(report_error(dir),
              HasSubstr("metrics.csv' is a folder, expected the run's file of that name"));
  fs::remove(dir / "metrics.csv");
  fs::create_symlink("loop-b", dir / "loop-a");
  fs::create_symlink("loop-a", dir / "loop-b");
  fs::create_symlink("loop-a", dir / "metrics.csv");
  EXPECT_THAT(report_error(dir), AllOf(HasSubstr("metrics.csv' cannot be read: Too many levels"),
                                       Not(HasSubstr("filesystem error"))));
  for (const char* link : {"metrics.csv", "loop-a", "loop-b"}) fs::remove(dir / link);
  write_run(dir, SyntheticRun{});
  // A number beyond a double is the JSON library's out_of_range, not a parse_error: named too.
  write(dir / "summary.json", "{\"config\": {}, \"final\": {\"consensus_distance\": 1e999}}");
  EXPECT_THAT(report_error(dir),
              AllOf(HasSubstr("summary.json' is not valid JSON (number overflow parsing '1e999')"),
                    Not(HasSubstr("json.exception"))));
  write_run(dir, SyntheticRun{});
  write(dir / "topology.json", "{\"num_nodes\": 2, \"spectral_gap\": 1e400, \"edges\": []}");
  EXPECT_THAT(report_error(dir), HasSubstr("topology.json' is not valid JSON (number overflow"));
  fs::remove(dir / "topology.json");
  write_run(dir, SyntheticRun{});
  write(dir / "cost.json", "{\"model\": \"mlp\"}");
  EXPECT_THAT(report_error(dir), HasSubstr("cost.json' needs a 'precisions' array"));
  fs::remove(dir / "cost.json");
  write(dir / "topology.json", "{\"num_nodes\": 2, \"edges\": [{\"src\": 0, \"dst\": 5}]}");
  EXPECT_THAT(report_error(dir), HasSubstr("edge 0 -> 5 names a node outside 0..1"));
  write(dir / "topology.json", "{\"num_nodes\": 2, \"edges\": [{\"src\": 0, \"dst\": 1e30}]}");
  EXPECT_THAT(report_error(dir), HasSubstr("an edge's dst 1e+30 is not a node id"));
  write(dir / "topology.json", "{\"num_nodes\": 2, \"edges\": [{\"src\": 0.5, \"dst\": 1}]}");
  EXPECT_THAT(report_error(dir), HasSubstr("an edge's src 0.5 is not a node id"));
  write(dir / "topology.json", "{\"nodes\": [{\"id\": 0, \"out_neighbors\": [\"x\"]}]}");
  EXPECT_THAT(report_error(dir), HasSubstr("an out-neighbour \"x\" is not a node id"));
  write(dir / "topology.json", "{\"num_nodes\": -5, \"edges\": []}");
  EXPECT_THAT(report_error(dir), HasSubstr("num_nodes = -5 (expected 1 to 4096)"));

  // Figures of the wrong type are named, not drawn as gaps.
  write_run(dir, SyntheticRun{});
  write(dir / "summary.json", "{\"config\": {}, \"final\": {\"average_model_accuracy\": \"abc\"}}");
  EXPECT_THAT(report_error(dir),
              HasSubstr("\"final\".average_model_accuracy must be a number, got \"abc\""));
  write(dir / "summary.json", "{\"config\": {\"data\": {\"skew\": \"abc\"}}, \"final\": {}}");
  EXPECT_THAT(report_error(dir), HasSubstr("\"config\".data.skew must be a number"));
  // ... and final figures outside their bounds (tables and pages would show 1e308 %).
  write(dir / "summary.json", "{\"config\": {}, \"final\": {\"average_model_accuracy\": 1e308}}");
  EXPECT_THAT(report_error(dir), HasSubstr("\"final\".average_model_accuracy = 1e+308 is out of "
                                           "range (expected a percentage from 0 to 100, or null)"));
  // The per-node arrays too, entry by entry (null: a dead node).
  write(dir / "summary.json",
        "{\"config\": {}, \"final\": {\"node_accuracy\": [50, null, 250]}}");
  EXPECT_THAT(report_error(dir), HasSubstr("\"final\".node_accuracy[2] (node 2) = 250 is out of "
                                           "range (expected a percentage from 0 to 100, or null)"));
  write(dir / "summary.json",
        "{\"config\": {}, \"final\": {\"bytes_sent_per_node\": [100, -5]}}");
  EXPECT_THAT(report_error(dir), HasSubstr("\"final\".bytes_sent_per_node[1] (node 1) = -5 is out "
                                           "of range (expected a whole number of bytes, at least 0"));
  write(dir / "summary.json", "{\"config\": {}, \"final\": {\"node_accuracy\": 7}}");
  EXPECT_THAT(report_error(dir), HasSubstr("\"final\".node_accuracy must be an array"));
  write(dir / "summary.json", "{\"config\": {}, \"final\": {\"mean_gb_sent_per_node\": -1}}");
  EXPECT_THAT(report_error(dir), HasSubstr("\"final\".mean_gb_sent_per_node = -1 is out of range"));
  write(dir / "summary.json", "{\"config\": {}, \"final\": {\"steps\": 2.5}}");
  EXPECT_THAT(report_error(dir), HasSubstr("\"final\".steps = 2.5 is out of range"));
  write(dir / "summary.json", "{\"config\": {}, \"final\": {\"consensus_distance\": null}}");
  fs::remove(dir / "topology.json");  // damaged above
  EXPECT_NO_THROW(write_report(dir, dir / "null-distance.html"));

  // A file of another shape (hand-edited, another tool's) is named, not shown as empty fields.
  write(dir / "summary.json", "[1, 2]");
  EXPECT_THAT(report_error(dir), HasSubstr("summary.json' is not a summary.json as lpdt train "
                                           "writes it: expected a JSON object, got array"));
  write(dir / "summary.json", "{\"accuracy\": 90}");
  EXPECT_THAT(report_error(dir), HasSubstr("no \"config\" object"));
  write(dir / "summary.json", "{\"config\": {}, \"final\": \"abc\"}");
  EXPECT_THAT(report_error(dir), HasSubstr("no \"final\" object"));

  // A node id no graph has would size the page's per-node arrays: an error naming the line.
  write_run(dir, SyntheticRun{});
  write(dir / "metrics.csv",
        "epoch,node,lr,train_loss,test_accuracy,bytes_sent\n"
        "1,0,0.1,1.5,10,100\n1,1000000000,0.05,2.3,10,100\n");
  EXPECT_THAT(report_error(dir),
              HasSubstr("metrics.csv' line 3: node 1e+09 is not a node id (expected 0 to 4095)"));

  // Figures outside the bounds a run writes them within are named, not drawn off the chart.
  fs::remove(dir / "topology.json");  // damaged above
  write_run(dir, SyntheticRun{});
  const auto metrics_row = [&](const std::string& row) {
    write(dir / "metrics.csv", "epoch,node,lr,train_loss,test_accuracy,bytes_sent\n" + row + "\n");
  };
  const auto epochs_row = [&](const std::string& row) {
    write(dir / "epochs.csv",
          "epoch,lr,train_loss,mean_accuracy,min_accuracy,max_accuracy,average_model_accuracy,"
          "consensus_distance,mean_gb_sent_per_node,elapsed_s\n" + row + "\n");
  };
  metrics_row("1,0,0.1,nan,nan,100");
  EXPECT_THAT(report_error(dir),
              HasSubstr("metrics.csv' line 2, column test_accuracy: 'nan' is out of range "
                        "(expected a percentage from 0 to 100)"));
  metrics_row("1,0,0.1,nan,250,100");
  EXPECT_THAT(report_error(dir), HasSubstr("column test_accuracy: '250' is out of range"));
  metrics_row("1,0,0.1,nan,50,-3");
  EXPECT_THAT(report_error(dir), HasSubstr("column bytes_sent: '-3' is out of range (expected a "
                                           "whole number, at least 0)"));
  // A diverged node's loss is NaN in a real run: drawn as a gap, not refused.
  metrics_row("1,0,0.1,nan,50,3");
  EXPECT_NO_THROW(write_report(dir, dir / "nan-loss.html"));

  write_run(dir, SyntheticRun{});
  write(dir / "class_histogram.csv", "node,class_0,class_1\n0,5,3\n1,-1,4\n");
  EXPECT_THAT(report_error(dir), HasSubstr("class_histogram.csv' line 3, column class_0: '-1' is "
                                           "out of range"));
  write(dir / "class_histogram.csv", "node,class_0,class_1\n0,5,3\n2,1,4\n");
  EXPECT_THAT(report_error(dir), HasSubstr("class_histogram.csv' line 3, column node: '2' where "
                                           "node 1 was expected"));
  write(dir / "class_histogram.csv", "node,class_0,class_1\n0,5,3.5\n");
  EXPECT_THAT(report_error(dir), HasSubstr("column class_1: '3.5' is out of range"));

  write_run(dir, SyntheticRun{});
  epochs_row("1,0.1,2,,,,101,0.5,0.1,3");
  EXPECT_THAT(report_error(dir),
              HasSubstr("epochs.csv' line 2, column average_model_accuracy: '101' is out of range "
                        "(expected a percentage from 0 to 100, or empty)"));
  epochs_row("1,0.1,2,,,,50,-0.5,0.1,3");
  EXPECT_THAT(report_error(dir), HasSubstr("column consensus_distance: '-0.5' is out of range"));
  // Empty node accuracies (eval.per_node = false) and a diverged run's NaN distance are runs' own.
  epochs_row("1,0.1,nan,,,,50,nan,0.1,3");
  EXPECT_NO_THROW(write_report(dir, dir / "nan-distance.html"));

  write_run(dir, SyntheticRun{});
  write(dir / "layers.csv",
        "epoch,layer,numel,distance,relative_distance,mean_node_norm,average_norm\n"
        "1,fc.weight,-50,0.5,0.1,1,1\n");
  EXPECT_THAT(report_error(dir), HasSubstr("layers.csv' line 2, column numel: '-50' is out of "
                                           "range"));
}

// A time-varying topology's topology.json, as a run writes it (graph::to_json of its schedule:
// a 'steps' array of graphs, no 'edges'), used to stop the report ("needs an 'edges' array").
// The page draws the graph of each step of the period.
TEST(ReportRun, ATimeVaryingTopologyDrawsEachStepsGraph) {
  const fs::path dir = fresh_dir("one-peer") / "run";
  SyntheticRun r;
  r.nodes = 8;
  write_run(dir, r);
  write_topology_and_cost(dir, r.nodes);
  const auto schedule = graph::make_topology(
      graph::TopologyOptions().name("one-peer-exponential").num_nodes(r.nodes));
  ASSERT_EQ(schedule->period(), 3);
  write(dir / "topology.json", graph::to_json(*schedule));
  const std::string html = read(write_report(dir));
  expect_well_formed(html);
  const std::string topology = section(html, "topology");
  EXPECT_THAT(topology, Not(HasSubstr("class=\"missing\"")));
  EXPECT_THAT(topology, HasSubstr("the graph changes every step, 3 graphs in turn"));
  EXPECT_EQ(count(topology, "<svg"), 3);
  // Each step's graph: every node sends to one peer, 2^t hops on.
  EXPECT_EQ(count(topology, "class=\"edge\""), 3 * r.nodes);
  for (const char* hop : {"hop 1", "hop 2", "hop 4"}) EXPECT_THAT(topology, HasSubstr(hop));
  // A damaged one names what it expects.
  write(dir / "topology.json", "{\"num_nodes\": 8, \"steps\": []}");
  EXPECT_THAT(report_error(dir),
              AllOf(HasSubstr("topology.json"), HasSubstr("'steps' must be a non-empty array")));
  write(dir / "topology.json",
        "{\"num_nodes\": 8, \"steps\": [{\"num_nodes\": 4, \"edges\": []}]}");
  EXPECT_THAT(report_error(dir), HasSubstr("a step's graph has 4 nodes where num_nodes is 8"));
}

TEST(ReportRun, AFolderThatIsNeitherARunNorASweepIsAnError) {
  const fs::path dir = fresh_dir("neither");
  write(dir / "notes.txt", "hello");
  EXPECT_THAT(report_error(dir),
              AllOf(HasSubstr(dir.string()), HasSubstr("neither a run folder"),
                    HasSubstr("summary.json or metrics.csv"), HasSubstr("runs/ subfolder")));
  EXPECT_THAT(report_error(dir / "absent"), HasSubstr("absent' is not a folder"));
  fs::create_directories(dir / "runs");
  EXPECT_THAT(report_error(dir), HasSubstr("holds no run folders"));
}

// A sweep: algo x precision x skew x 2 seeds. Accuracy = base(algo) - 20 skew - 5 (int8) +- 1
// (seed 1: -1, seed 2: +1), so each point's mean is the formula and its std sqrt(2).
double sweep_accuracy(const std::string& algo, const std::string& precision, double skew,
                      int seed) {
  return (algo == "choco" ? 70 : 60) - 20 * skew - (precision == "int8" ? 5 : 0) +
         (seed == 1 ? -1 : 1);
}

fs::path write_sweep(const std::string& name, bool vary_skew) {
  const fs::path dir = fresh_dir(name);
  for (const std::string algo : {"choco", "dpsgd"}) {
    for (const std::string precision : {"fp32", "int8"}) {
      for (double skew : vary_skew ? std::vector<double>{0, 0.5, 1} : std::vector<double>{0.5}) {
        for (int seed : {1, 2}) {
          SyntheticRun r;
          r.algo = algo;
          r.precision = precision;
          r.message_values = precision;  // linked in the grid, as in the paper's presets
          r.skew = skew;
          r.seed = seed;
          r.accuracy = sweep_accuracy(algo, precision, skew, seed);
          r.name =
              algo + "_" + precision + "_" + std::to_string(skew) + "_seed-" + std::to_string(seed);
          write_run(dir / "runs" / (r.name + "-20261123-101500"), r);
        }
      }
    }
  }
  SyntheticRun unfinished;
  unfinished.summary = false;
  write_run(dir / "runs" / "choco_unfinished_seed-3-20261123-101500", unfinished);
  write(dir / "table-average_model_accuracy.md",
        "**average_model_accuracy** (mean ± sample standard deviation over seeds (n))\n\n"
        "| data.skew | choco | dpsgd |\n|---|---|---|\n| 0 | 69 ± 1.414 (2) | 59 <b> |\n");
  return dir;
}

TEST(ReportSweep, SkewPlotDrawsFp32SolidInt8DashedAtTheMeansOverSeeds) {
  const fs::path dir = write_sweep("sweep", true);
  const std::string html = read(write_report(dir));
  expect_well_formed(html);
  const std::string skew = section(html, "skew");
  ASSERT_THAT(skew, HasSubstr("<svg"));
  // One line per (algo, precision): fp32 solid, int8 dashed, the same colour per algo. The
  // message values, linked to the precision, neither split the lines nor change their colour:
  // their labels name them.
  std::map<std::string, std::string> colours;
  const std::regex line(
      "<path class=\"line skew-line ([a-z0-9]+)\"[^>]*stroke=\"(#[0-9a-f]+)\""
      "([^>]*)><title>([^<]*)</title>");
  int lines = 0;
  for (auto it = std::sregex_iterator(skew.begin(), skew.end(), line); it != std::sregex_iterator();
       ++it, ++lines) {
    const std::string kind = (*it)[1], colour = (*it)[2], rest = (*it)[3], title = (*it)[4];
    const bool int8 = title.find("int8") != std::string::npos;
    EXPECT_EQ(kind, int8 ? "lowp" : "fp32") << title;
    EXPECT_THAT(title, EndsWith(int8 ? ", int8 (algo.message_values=int8)"
                                     : ", fp32 (algo.message_values=fp32)"));
    EXPECT_EQ(rest.find("stroke-dasharray") != std::string::npos, int8) << title;
    const std::string algo = title.substr(0, title.find(','));
    if (colours.count(algo)) {
      EXPECT_EQ(colours[algo], colour) << title;
    }
    colours[algo] = colour;
  }
  EXPECT_EQ(lines, 4);
  EXPECT_EQ(colours.size(), 2u);
  EXPECT_NE(colours["algo.name=choco"], colours["algo.name=dpsgd"]);
  EXPECT_EQ(count(skew, "class=\"error-bar\""), 4 * 3) << "two seeds per point";
  // dpsgd int8 at skew 0.5: mean 60 - 10 - 5 = 45, at the pixels of the axes' ticks.
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(skew, m,
                        std::regex("<circle class=\"pt\"([^>]*)><title>algo.name=dpsgd, int8 "
                                   "\\(algo.message_values=int8\\): 0.5, "
                                   "([0-9.]+) ± ([0-9.]+)</title>")));
  EXPECT_EQ(std::stod(m[2]), 45);
  EXPECT_NEAR(std::stod(m[3]), std::sqrt(2.0), 1e-3);
  EXPECT_NEAR(attribute(m[1], "cy"), pixel_of(ticks(skew, "y"), 45), kPixelTolerance);
  EXPECT_NEAR(attribute(m[1], "cx"), pixel_of(ticks(skew, "x"), 0.5), kPixelTolerance);

  const std::string tables = section(html, "tables");
  EXPECT_THAT(tables, HasSubstr("<th>choco</th>"));
  EXPECT_THAT(tables, HasSubstr("<td>69 ± 1.414 (2)</td>"));
  EXPECT_THAT(tables, HasSubstr("59 &lt;b&gt;"));
  EXPECT_THAT(tables, HasSubstr("<strong>average_model_accuracy</strong>"));

  const std::string runs = section(html, "runs");
  EXPECT_EQ(count(runs, "<tr>"), 1 + 24);
  EXPECT_EQ(count(runs, "class=\"sparkline\""), 24);
  for (const char* key : {"<th>algo.name</th>", "<th>model.precision</th>", "<th>data.skew</th>"}) {
    EXPECT_THAT(runs, HasSubstr(key));
  }
  EXPECT_THAT(runs, Not(HasSubstr("<th>run.seed</th>")));
  EXPECT_THAT(runs, Not(HasSubstr("<th>graph.nodes</th>"))) << "the same in every run";
  EXPECT_THAT(section(html, "unfinished"), HasSubstr("choco_unfinished_seed-3"));
  EXPECT_THAT(runs, Not(HasSubstr("choco_unfinished_seed-3")));
}

// A run folder the sweep made but wrote nothing into yet (killed at once) is said to be so, not
// counted as epochs "recorded" in an epochs.csv it does not have.
TEST(ReportSweep, AnEmptyRunFolderIsNotStarted) {
  const fs::path dir = write_sweep("sweep_empty_run", true);
  fs::create_directories(dir / "runs" / "choco_empty_seed-4-20261123-101500");
  const std::string unfinished = section(read(write_report(dir)), "unfinished");
  EXPECT_THAT(unfinished, HasSubstr("choco_empty_seed-4"));
  EXPECT_THAT(unfinished, HasSubstr("no epochs.csv: not started"));
  EXPECT_THAT(unfinished, HasSubstr("epoch(s) recorded in epochs.csv")) << "the other unfinished run";
}

// A point's unfinished folder that a later folder of the point replaced (the sweep run again after
// it stopped before its first checkpoint) is an earlier attempt, not an unfinished run.
TEST(ReportSweep, AnEarlierAttemptOfAFinishedPointIsSuperseded) {
  const fs::path dir = fresh_dir("sweep_superseded");
  SyntheticRun done;
  done.name = "optim.lr-0.1_seed-1";
  write_run(dir / "runs" / (done.name + "-20261123-111500"), done);
  fs::create_directories(dir / "runs" / (done.name + "-20261123-101500"));
  // Another point's name that merely starts alike is its own point.
  fs::create_directories(dir / "runs" / "optim.lr-0.1_seed-10-20261123-101500");
  const std::string html = read(write_report(dir));
  EXPECT_THAT(html, HasSubstr("3 runs, 1 finished, 1 unfinished (0 diverged), 1 superseded by a "
                              "later attempt"));
  const std::string unfinished = section(html, "unfinished");
  EXPECT_THAT(unfinished, HasSubstr("superseded: the point was trained again in " + done.name +
                                    "-20261123-111500"));
  EXPECT_THAT(unfinished, HasSubstr("no epochs.csv: not started")) << "seed 10's own folder";
}

TEST(ReportSweep, WithoutVaryingSkewTheSkewPlotIsANote) {
  const std::string html = read(write_report(write_sweep("sweep_fixed_skew", false)));
  expect_well_formed(html);
  EXPECT_THAT(section(html, "skew"), HasSubstr("data.skew does not vary"));
  EXPECT_THAT(section(html, "skew"), Not(HasSubstr("<svg")));
  EXPECT_EQ(count(section(html, "runs"), "class=\"sparkline\""), 8);
}

// A diverged run (diverged.json, no summary.json) is named as such among the unfinished runs, and
// the key its grid point varies is in the header although no finished run differs in it.
TEST(ReportSweep, DivergedRunsAreNamedAndTheirKeysCount) {
  const fs::path dir = fresh_dir("sweep_diverged");
  SyntheticRun good;
  good.name = "optim.lr-0.1_seed-1";
  const fs::path good_dir = dir / "runs" / (good.name + "-20261123-101500");
  write_run(good_dir, good);
  json summary = json::parse(read(good_dir / "summary.json"));
  summary["config"]["optim"] = {{"lr", 0.1}};
  write(good_dir / "summary.json", summary.dump(2));
  SyntheticRun bad;
  bad.summary = false;
  bad.epochs = 0;
  bad.name = "optim.lr-1e30_seed-1";
  const fs::path bad_dir = dir / "runs" / (bad.name + "-20261123-101500");
  write_run(bad_dir, bad);
  json config = summary["config"];
  config["optim"]["lr"] = 1e30;
  config["run"]["name"] = bad.name;
  write(bad_dir / "diverged.json",
        json{{"config", config}, {"epoch", 1}, {"step", 3}, {"nodes", "0, 1"}, {"message", "x"}}
            .dump(2));
  const std::string html = read(write_report(dir));
  expect_well_formed(html);
  EXPECT_THAT(html, HasSubstr("2 runs, 1 finished, 1 unfinished (1 diverged); varying keys: "
                              "optim.lr"));
  const std::string unfinished = section(html, "unfinished");
  EXPECT_THAT(unfinished, HasSubstr("optim.lr-1e30_seed-1"));
  EXPECT_THAT(unfinished, HasSubstr("diverged in epoch 1 (diverged.json"));
  EXPECT_THAT(unfinished, Not(HasSubstr("optim.lr-0.1_seed-1")));
  // The Runs table has the key's column too (the finished run's value in it).
  EXPECT_THAT(section(html, "runs"), HasSubstr("<th>optim.lr</th>"));
}

// A run whose model has no normalisation layers (LeNet-5, the MLP, the transformers) is not
// described with the model.norm its config carries; one whose model has them is.
TEST(ReportRun, TheModelRowNamesANormOnlyWhereTheModelHasOne) {
  const fs::path dir = fresh_dir("norm_row") / "run";
  SyntheticRun r;
  write_run(dir, r);
  json summary = json::parse(read(dir / "summary.json"));
  for (const auto& [arch, expected, unexpected] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"mlp", "<td>mlp</td>", "(norm evonorm)"},
           {"resnet", "<td>resnet (norm evonorm)</td>", "<td>resnet</td>"}}) {
    summary["config"]["model"]["arch"] = arch;
    summary["config"]["model"]["norm"] = "evonorm";
    write(dir / "summary.json", summary.dump(2));
    const std::string html = read(write_report(dir, dir.parent_path() / "page.html"));
    EXPECT_THAT(html, HasSubstr(expected)) << arch;
    EXPECT_THAT(html, Not(HasSubstr(unexpected))) << arch;
  }
}

}  // namespace
}  // namespace lpdt::exp::report
