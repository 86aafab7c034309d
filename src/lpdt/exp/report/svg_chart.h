#pragma once
// A small SVG chart writer for the HTML reports (docs/reports.md): line charts (solid, dashed,
// markers, +-spread as a band or error bars), bar charts (single, stacked, grouped), a directed
// graph on a circle and sparklines. Every chart is one self-contained <svg> element with width,
// height, viewBox and a <title>; all text is XML-escaped. Layout constants are fixed so that a
// value maps to the same pixel on every page; each chart marks its plot area with <rect
// class="plot-area"> and each y tick with <text class="tick-y">, which is how the tests read the
// mapping back.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lpdt::exp::report {

// &, <, >, " and ' as entities: safe inside element text and attribute values.
std::string xml_escape(std::string_view text);

// A number in at most 4 significant digits, without trailing zeros or a '+' in exponents:
// 0.5, 12.35, 1.255e+07 -> "1.255e7", 100 -> "100", -0 -> "0".
std::string format_number(double value);

// Coordinates in SVG attributes: 2 decimals, trailing zeros dropped.
std::string format_coordinate(double value);

// The fixed categorical palette (Tableau 10): colour i % 10.
const std::string& palette_color(std::size_t i);

// A linear or log10 map from data [lo, hi] to pixels [pixel_lo, pixel_hi].
class Scale {
 public:
  // integer: ticks at whole numbers only (epochs, node ids).
  Scale(double lo, double hi, double pixel_lo, double pixel_hi, bool log, bool integer = false);
  double operator()(double value) const;
  double lo() const { return lo_; }
  double hi() const { return hi_; }
  bool log() const { return log_; }
  // Tick values: "nice" steps (1, 2, 5 x 10^k) for a linear scale, powers of ten for a log scale
  // (with 2 and 5 between them when the range spans less than two decades).
  std::vector<double> ticks() const;

 private:
  double lo_, hi_, pixel_lo_, pixel_hi_;
  bool log_, integer_;
};

// The range an axis shows for data in [lo, hi]: widened outwards to nice tick steps (linear) or
// whole decades (log; lo > 0 required). A zero-width range is widened around its value.
std::pair<double, double> nice_range(double lo, double hi, bool log, bool integer = false);

struct AxisSpec {
  std::string label;
  bool log = false;
  bool integer = false;            // whole-number ticks
  std::optional<double> min, max;  // fixed ends; otherwise nice_range of the data
};
// A linear axis with a label; an axis with whole-number ticks (epochs).
AxisSpec axis(const std::string& label);
AxisSpec integer_axis(const std::string& label);

struct LineSeries {
  std::string name;
  std::vector<double> x, y;
  std::vector<double> spread;  // optional, one per point: y +- spread as a light band
  bool error_bars = false;     // spread as error bars (whiskers with caps) instead of a band
  double error_bar_dodge = 0;  // horizontal shift of the error bars in pixels (overlapping series)
  std::string color;           // empty: palette colour of the series index
  double stroke_width = 1.5;
  bool dashed = false;
  bool markers = false;  // a circle per point (always for a single-point series)
  bool in_legend = true;
  std::string css_class;  // added to the path's class ("line <css_class>")
};

// A series with a name, the other fields at their defaults.
LineSeries line_series(const std::string& name);

struct LineChart {
  std::string title;
  int width = 600, height = 340;
  AxisSpec x, y;
  std::vector<LineSeries> series;
  std::vector<std::string> notes;  // small lines of text under the legend
};
std::string render_line_chart(const LineChart& chart);

struct BarSeries {
  std::string name;
  std::vector<double> values;  // one per category
  std::string color;           // empty: palette colour of the series index
};

struct BarChart {
  std::string title;
  int width = 600, height = 340;
  std::vector<std::string> categories;
  std::string x_label;
  AxisSpec y;                     // log is not supported for bars (ignored)
  std::vector<BarSeries> series;  // stack segments (stacked) or bars side by side (grouped)
  bool stacked = true;
  std::vector<std::string> annotations;  // optional text above each category's bars
  bool legend = true;
  std::vector<std::string> notes;  // small lines of text under the legend
};
std::string render_bar_chart(const BarChart& chart);

struct GraphDrawing {
  std::string title;
  int width = 460, height = 460;
  int num_nodes = 0;
  struct Edge {
    int src = 0, dst = 0;
    double weight = 0;
  };
  std::vector<Edge> edges;      // self loops are not drawn
  std::string id_prefix = "g";  // makes the arrowhead marker's id unique on the page
};
// Nodes on a circle (node 0 at the top, clockwise), directed arcs with arrowheads, node labels.
std::string render_graph(const GraphDrawing& graph);

// A small line without axes: the values in order, the last one marked.
std::string render_sparkline(const std::vector<double>& values, const std::string& title,
                             int width = 120, int height = 28);

}  // namespace lpdt::exp::report
