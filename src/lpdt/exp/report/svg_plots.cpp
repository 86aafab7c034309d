// Line and bar charts (svg_chart.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "lpdt/exp/report/svg_chart.h"
#include "lpdt/exp/report/svg_elements.h"

namespace lpdt::exp::report {
namespace {

// Layout of a line or bar chart, in pixels: the title above the plot area, tick labels and the
// axis labels around it, the legend and notes below (they add to the chart's height).
constexpr double kMarginLeft = 66;
constexpr double kMarginRight = 18;
constexpr double kMarginTop = 36;
constexpr double kMarginBottom = 46;
constexpr double kLegendRowHeight = 18;
constexpr double kCharWidth = 6.6;  // estimated width of one character at font-size 12
constexpr double kAnnotationHeadroom = 1.1;

bool finite(double v) { return std::isfinite(v); }

struct Box {
  double left, top, width, height;
  double right() const { return left + width; }
  double bottom() const { return top + height; }
};

// Legend entries flow left to right in rows under the plot.
struct LegendEntry {
  std::string name, color;
  bool dashed = false, box = false;  // box: a filled square (bars), else a line
  double stroke_width = 2;
};

double entry_width(const LegendEntry& e) { return 30 + kCharWidth * e.name.size() + 14; }

int legend_rows(const std::vector<LegendEntry>& entries, double width) {
  if (entries.empty()) return 0;
  int rows = 1;
  double x = 0;
  for (const auto& e : entries) {
    if (x > 0 && x + entry_width(e) > width - 2 * kMarginRight) {
      ++rows;
      x = 0;
    }
    x += entry_width(e);
  }
  return rows;
}

// A chart's plot area below its title, and its full height with the legend and notes under it.
struct ChartFrame {
  Box plot;
  double legend_height = 0;
  double total_height = 0;
};
ChartFrame chart_frame(double width, double height, const std::vector<LegendEntry>& legend,
                       std::size_t notes) {
  ChartFrame frame;
  frame.plot = Box{kMarginLeft, kMarginTop, width - kMarginLeft - kMarginRight,
                   height - kMarginTop - kMarginBottom};
  frame.legend_height = legend_rows(legend, width) * kLegendRowHeight;
  frame.total_height = height + frame.legend_height + notes * kLegendRowHeight + 6;
  return frame;
}

std::string render_legend(const std::vector<LegendEntry>& entries, double width, double top) {
  std::string out = "<g class=\"legend\">\n";
  double x = kMarginRight, y = top + kLegendRowHeight / 2;
  for (const auto& e : entries) {
    if (x > kMarginRight && x + entry_width(e) > width - kMarginRight) {
      x = kMarginRight;
      y += kLegendRowHeight;
    }
    if (e.box) {
      out += "<rect x=\"" + format_coordinate(x + 6) + "\" y=\"" + format_coordinate(y - 6) +
             "\" width=\"12\" height=\"12\" fill=\"" + e.color + "\"/>\n";
    } else {
      out += "<line x1=\"" + format_coordinate(x) + "\" y1=\"" + format_coordinate(y) + "\" x2=\"" +
             format_coordinate(x + 24) + "\" y2=\"" + format_coordinate(y) + "\" stroke=\"" +
             e.color + "\" stroke-width=\"" + format_coordinate(e.stroke_width) + "\"" +
             (e.dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
    }
    out += svg_text(x + 30, y + 4, e.name, "font-size=\"12\"");
    x += entry_width(e);
  }
  return out + "</g>\n";
}

std::string render_notes(const std::vector<std::string>& notes, double top) {
  std::string out;
  for (std::size_t i = 0; i < notes.size(); ++i) {
    out += svg_text(kMarginRight, top + 14 + kLegendRowHeight * i, notes[i],
                    "font-size=\"11\" fill=\"#555\" class=\"note\"");
  }
  return out;
}

// The plot area's frame, grid lines, ticks and axis labels for a y scale (and an x scale when
// the x axis is numeric).
std::string render_y_axis(const Box& box, const Scale& y, const std::string& label) {
  std::string out = "<rect class=\"plot-area\" x=\"" + format_coordinate(box.left) + "\" y=\"" +
                    format_coordinate(box.top) + "\" width=\"" + format_coordinate(box.width) +
                    "\" height=\"" + format_coordinate(box.height) +
                    "\" fill=\"none\" stroke=\"#999\"/>\n";
  for (double v : y.ticks()) {
    const double py = y(v);
    out += "<line x1=\"" + format_coordinate(box.left) + "\" y1=\"" + format_coordinate(py) +
           "\" x2=\"" + format_coordinate(box.right()) + "\" y2=\"" + format_coordinate(py) +
           "\" stroke=\"#e4e4e4\"/>\n";
    out += "<text class=\"tick-y\" x=\"" + format_coordinate(box.left - 6) + "\" y=\"" +
           format_coordinate(py) + "\" dy=\"4\" " + kFont +
           " font-size=\"11\" text-anchor=\"end\">" + xml_escape(format_number(v)) + "</text>\n";
  }
  const std::string cx = format_coordinate(16), cy = format_coordinate(box.top + box.height / 2);
  out += "<text x=\"" + cx + "\" y=\"" + cy + "\" " + kFont +
         " font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 " + cx + " " + cy +
         ")\">" + xml_escape(label) + "</text>\n";
  return out;
}

std::string render_x_axis(const Box& box, const Scale& x, const std::string& label) {
  std::string out;
  for (double v : x.ticks()) {
    const double px = x(v);
    out += "<line x1=\"" + format_coordinate(px) + "\" y1=\"" + format_coordinate(box.top) +
           "\" x2=\"" + format_coordinate(px) + "\" y2=\"" + format_coordinate(box.bottom()) +
           "\" stroke=\"#f0f0f0\"/>\n";
    out += "<text class=\"tick-x\" x=\"" + format_coordinate(px) + "\" y=\"" +
           format_coordinate(box.bottom() + 16) + "\" " + kFont +
           " font-size=\"11\" text-anchor=\"middle\">" + xml_escape(format_number(v)) + "</text>\n";
  }
  out += svg_text(box.left + box.width / 2, box.bottom() + 36, label,
                  "font-size=\"12\" text-anchor=\"middle\"");
  return out;
}

void extend(double v, bool log, double& lo, double& hi) {
  if (!finite(v) || (log && v <= 0)) return;
  lo = std::min(lo, v);
  hi = std::max(hi, v);
}

// The scale's data range: the spec's fixed ends, else the nice range of the data seen.
std::pair<double, double> axis_range(const AxisSpec& axis, double lo, double hi) {
  if (lo > hi) {  // no data
    lo = axis.log ? 1 : 0;
    hi = axis.log ? 10 : 1;
  }
  auto [nlo, nhi] = nice_range(lo, hi, axis.log, axis.integer);
  return {axis.min.value_or(nlo), axis.max.value_or(nhi)};
}

}  // namespace

std::string render_line_chart(const LineChart& chart) {
  std::vector<LegendEntry> legend;
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const LineSeries& s = chart.series[i];
    if (s.in_legend) {
      legend.push_back({s.name, s.color.empty() ? palette_color(i) : s.color, s.dashed, false,
                        std::min(3.0, s.stroke_width)});
    }
  }
  const double width = chart.width;
  const ChartFrame frame = chart_frame(width, chart.height, legend, chart.notes.size());
  const double legend_height = frame.legend_height, total_height = frame.total_height;
  const Box& box = frame.plot;

  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
  for (const LineSeries& s : chart.series) {
    for (std::size_t k = 0; k < s.x.size() && k < s.y.size(); ++k) {
      extend(s.x[k], chart.x.log, xlo, xhi);
      const double spread = k < s.spread.size() && finite(s.spread[k]) ? s.spread[k] : 0;
      extend(s.y[k] - spread, chart.y.log, ylo, yhi);
      extend(s.y[k] + spread, chart.y.log, ylo, yhi);
    }
  }
  const auto [x0, x1] = axis_range(chart.x, xlo, xhi);
  const auto [y0, y1] = axis_range(chart.y, ylo, yhi);
  const Scale xs(x0, x1, box.left, box.right(), chart.x.log, chart.x.integer);
  const Scale ys(y0, y1, box.bottom(), box.top, chart.y.log, chart.y.integer);

  std::ostringstream out;
  out << svg_open("chart line-chart", width, total_height, chart.title)
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << chart_title(width, chart.title) << render_y_axis(box, ys, chart.y.label)
      << render_x_axis(box, xs, chart.x.label);

  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const LineSeries& s = chart.series[i];
    const std::string color = s.color.empty() ? palette_color(i) : s.color;
    const std::size_t n = std::min(s.x.size(), s.y.size());
    // Error bars: a whisker from y - spread to y + spread with caps, where spread > 0.
    if (s.error_bars) {
      for (std::size_t k = 0; k < n && k < s.spread.size(); ++k) {
        const double px = xs(s.x[k]) + s.error_bar_dodge;
        const double pu = ys(s.y[k] + s.spread[k]), pl = ys(s.y[k] - s.spread[k]);
        if (!finite(px) || !finite(pu) || !finite(pl) || !(s.spread[k] > 0)) continue;
        const std::string x = format_coordinate(px), x0 = format_coordinate(px - 3),
                          x1 = format_coordinate(px + 3), u = format_coordinate(pu),
                          l = format_coordinate(pl);
        out << "<path class=\"error-bar\" d=\"M" << x << " " << u << " L" << x << " " << l << " M"
            << x0 << " " << u << " L" << x1 << " " << u << " M" << x0 << " " << l << " L" << x1
            << " " << l << "\" stroke=\"" << color << "\" stroke-width=\"1.2\" fill=\"none\"/>\n";
      }
    }
    // The band: y + spread left to right, then y - spread back.
    if (!s.spread.empty() && !s.error_bars) {
      std::string upper, lower;
      for (std::size_t k = 0; k < n && k < s.spread.size(); ++k) {
        const double px = xs(s.x[k]);
        const double pu = ys(s.y[k] + s.spread[k]), pl = ys(s.y[k] - s.spread[k]);
        if (!finite(px) || !finite(pu) || !finite(pl)) continue;
        upper += (upper.empty() ? "M" : " L") + format_coordinate(px) + " " + format_coordinate(pu);
        lower = " L" + format_coordinate(px) + " " + format_coordinate(pl) + lower;
      }
      if (!upper.empty()) {
        out << "<path class=\"band\" d=\"" << upper << lower << " Z\" fill=\"" << color
            << "\" fill-opacity=\"0.15\" stroke=\"none\"/>\n";
      }
    }
    // The line, broken where a value is missing (or not positive on a log axis).
    std::string d;
    bool pen_down = false;
    int points = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const double px = xs(s.x[k]), py = ys(s.y[k]);
      if (!finite(px) || !finite(py)) {
        pen_down = false;
        continue;
      }
      if (!d.empty()) d += ' ';
      d += pen_down ? 'L' : 'M';
      d += format_coordinate(px);
      d += ' ';
      d += format_coordinate(py);
      pen_down = true;
      ++points;
    }
    if (!d.empty()) {
      out << "<path class=\"line" << (s.css_class.empty() ? "" : " " + s.css_class) << "\" d=\""
          << d << "\" fill=\"none\" stroke=\"" << color << "\" stroke-width=\""
          << format_coordinate(s.stroke_width) << "\" stroke-linejoin=\"round\""
          << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << "><title>" << xml_escape(s.name)
          << "</title></path>\n";
    }
    if (s.markers || points == 1) {
      for (std::size_t k = 0; k < n; ++k) {
        const double px = xs(s.x[k]), py = ys(s.y[k]);
        if (!finite(px) || !finite(py)) continue;
        std::string tip = s.name + ": " + format_number(s.x[k]) + ", " + format_number(s.y[k]);
        if (k < s.spread.size()) tip += " ± " + format_number(s.spread[k]);
        out << "<circle class=\"pt\" cx=\"" << format_coordinate(px) << "\" cy=\""
            << format_coordinate(py) << "\" r=\"3\" fill=\"" << color << "\"><title>"
            << xml_escape(tip) << "</title></circle>\n";
      }
    }
  }
  out << render_legend(legend, width, chart.height)
      << render_notes(chart.notes, chart.height + legend_height) << "</svg>\n";
  return out.str();
}

std::string render_bar_chart(const BarChart& chart) {
  std::vector<LegendEntry> legend;
  if (chart.legend) {
    for (std::size_t i = 0; i < chart.series.size(); ++i) {
      const BarSeries& s = chart.series[i];
      legend.push_back({s.name, s.color.empty() ? palette_color(i) : s.color, false, true});
    }
  }
  const double width = chart.width;
  const ChartFrame frame = chart_frame(width, chart.height, legend, chart.notes.size());
  const double legend_height = frame.legend_height, total_height = frame.total_height;
  const Box& box = frame.plot;
  const std::size_t categories = chart.categories.size();

  // The y range: from zero to the tallest stack (stacked) or bar (grouped).
  double top = 0;
  for (std::size_t c = 0; c < categories; ++c) {
    double stack = 0;
    for (const BarSeries& s : chart.series) {
      const double v = c < s.values.size() && finite(s.values[c]) ? s.values[c] : 0;
      stack = chart.stacked ? stack + std::max(0.0, v) : std::max(stack, v);
    }
    top = std::max(top, stack);
  }
  AxisSpec y = chart.y;
  y.log = false;
  if (!y.min) y.min = 0;
  // Headroom for the text above the bars.
  if (!chart.annotations.empty()) top *= kAnnotationHeadroom;
  const auto [y0, y1] = axis_range(y, 0, top > 0 ? top : 1);
  const Scale ys(y0, y1, box.bottom(), box.top, false);

  std::ostringstream out;
  out << svg_open("chart bar-chart", width, total_height, chart.title)
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << chart_title(width, chart.title) << render_y_axis(box, ys, chart.y.label);

  const double band = categories ? box.width / categories : box.width;
  const double bar_group = band * 0.7;
  const std::size_t groups = chart.stacked ? 1 : std::max<std::size_t>(1, chart.series.size());
  const double bar_width = bar_group / groups;
  // Category labels: every k-th when they would overlap.
  std::size_t longest = 1;
  for (const auto& c : chart.categories) longest = std::max(longest, c.size());
  const std::size_t label_every =
      std::max<std::size_t>(1, std::ceil((longest * kCharWidth * 0.9 + 6) / band));

  for (std::size_t c = 0; c < categories; ++c) {
    const double left = box.left + band * c + (band - bar_group) / 2;
    double base = 0;
    double highest = ys(0);
    for (std::size_t i = 0; i < chart.series.size(); ++i) {
      const BarSeries& s = chart.series[i];
      const double v = c < s.values.size() && finite(s.values[c]) ? std::max(0.0, s.values[c]) : 0;
      const double from = chart.stacked ? base : 0, to = from + v;
      const double x = chart.stacked ? left : left + bar_width * i;
      const double py0 = ys(from), py1 = ys(to);
      highest = std::min(highest, py1);
      out << "<rect class=\"bar\" x=\"" << format_coordinate(x) << "\" y=\""
          << format_coordinate(py1) << "\" width=\"" << format_coordinate(bar_width * 0.96)
          << "\" height=\"" << format_coordinate(py0 - py1) << "\" fill=\""
          << (s.color.empty() ? palette_color(i) : s.color) << "\"><title>"
          << xml_escape(chart.categories[c] + ", " + s.name + ": " + format_number(v))
          << "</title></rect>\n";
      if (chart.stacked) base = to;
    }
    if (c < chart.annotations.size() && !chart.annotations[c].empty()) {
      out << svg_text(left + bar_group / 2, highest - 5, chart.annotations[c],
                      "font-size=\"11\" text-anchor=\"middle\" class=\"annotation\"");
    }
    if (c % label_every == 0) {
      out << "<text class=\"tick-x\" x=\"" << format_coordinate(left + bar_group / 2) << "\" y=\""
          << format_coordinate(box.bottom() + 16) << "\" " << kFont
          << " font-size=\"11\" text-anchor=\"middle\">" << xml_escape(chart.categories[c])
          << "</text>\n";
    }
  }
  out << svg_text(box.left + box.width / 2, box.bottom() + 36, chart.x_label,
                  "font-size=\"12\" text-anchor=\"middle\"")
      << render_legend(legend, width, chart.height)
      << render_notes(chart.notes, chart.height + legend_height) << "</svg>\n";
  return out.str();
}

}  // namespace lpdt::exp::report
