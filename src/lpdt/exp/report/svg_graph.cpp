// A directed graph on a circle and sparklines (svg_chart.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "lpdt/exp/report/svg_chart.h"
#include "lpdt/exp/report/svg_elements.h"

namespace lpdt::exp::report {

std::string render_graph(const GraphDrawing& graph) {
  const double width = graph.width, height = graph.height;
  const double cx = width / 2, cy = height / 2 + 12;
  const double radius = std::min(width, height) / 2 - 48;
  const int n = std::max(graph.num_nodes, 0);
  constexpr double kPi = 3.14159265358979323846;
  // Node circles shrink with the number of nodes so that neighbours do not overlap.
  const double node_r = n > 0 ? std::clamp(kPi * radius / n * 0.55, 3.0, 15.0) : 15.0;
  auto position = [&](int i) {
    const double angle = -kPi / 2 + 2 * kPi * i / std::max(n, 1);
    return std::pair<double, double>{cx + radius * std::cos(angle), cy + radius * std::sin(angle)};
  };
  const std::string marker = graph.id_prefix + "-arrow";
  std::ostringstream out;
  out << svg_open("chart graph", width, height, graph.title)
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<defs><marker id=\"" << marker
      << "\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
         "orient=\"auto-start-reverse\"><path d=\"M0 0 L10 5 L0 10 Z\" fill=\"#555\"/>"
         "</marker></defs>\n"
      << chart_title(width, graph.title);
  const double opacity = graph.edges.size() > 150 ? 0.35 : 0.8;
  for (const auto& e : graph.edges) {
    if (e.src == e.dst || e.src < 0 || e.dst < 0 || e.src >= n || e.dst >= n) continue;
    const auto [x0, y0] = position(e.src);
    const auto [x1, y1] = position(e.dst);
    // A quadratic arc bent to the left of its direction: a->b and b->a stay apart.
    const double dx = x1 - x0, dy = y1 - y0, length = std::hypot(dx, dy);
    const double qx = (x0 + x1) / 2 - dy * 0.15, qy = (y0 + y1) / 2 + dx * 0.15;
    auto towards = [](double ax, double ay, double bx, double by, double d) {
      const double l = std::hypot(bx - ax, by - ay);
      return std::pair<double, double>{ax + (bx - ax) * d / l, ay + (by - ay) * d / l};
    };
    if (length < 2 * node_r + 2) continue;
    const auto [sx, sy] = towards(x0, y0, qx, qy, node_r);
    const auto [ex, ey] = towards(x1, y1, qx, qy, node_r + 1);
    out << "<path class=\"edge\" d=\"M" << format_coordinate(sx) << " " << format_coordinate(sy)
        << " Q" << format_coordinate(qx) << " " << format_coordinate(qy) << " "
        << format_coordinate(ex) << " " << format_coordinate(ey)
        << "\" fill=\"none\" stroke=\"#555\" stroke-opacity=\"" << format_coordinate(opacity)
        << "\" stroke-width=\"1.2\" marker-end=\"url(#" << marker << ")\"><title>" << e.src << " → "
        << e.dst << ", weight " << xml_escape(format_number(e.weight)) << "</title></path>\n";
  }
  for (int i = 0; i < n; ++i) {
    const auto [x, y] = position(i);
    out << "<circle class=\"node\" cx=\"" << format_coordinate(x) << "\" cy=\""
        << format_coordinate(y) << "\" r=\"" << format_coordinate(node_r) << "\" fill=\""
        << palette_color(0) << "\" stroke=\"white\"><title>node " << i << "</title></circle>\n";
    if (node_r >= 9) {
      out << svg_text(x, y + 4, std::to_string(i),
                      "font-size=\"11\" fill=\"white\" text-anchor=\"middle\"");
    } else if (n <= 64) {  // labels outside the circle, pushed away from the centre
      const double ox = (x - cx) / radius, oy = (y - cy) / radius;
      out << svg_text(x + ox * (node_r + 9), y + oy * (node_r + 9) + 4, std::to_string(i),
                      "font-size=\"9\" text-anchor=\"middle\"");
    }
  }
  out << "</svg>\n";
  return out.str();
}

std::string render_sparkline(const std::vector<double>& values, const std::string& title, int width,
                             int height) {
  std::ostringstream out;
  out << svg_open("sparkline", width, height, title);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (lo <= hi) {
    if (hi == lo) {
      lo -= 1;
      hi += 1;
    }
    const Scale xs(0, std::max<double>(1, values.size() - 1), 2, width - 4, false);
    const Scale ys(lo, hi, height - 3, 3, false);
    std::string points;
    double last_x = 0, last_y = 0;
    for (std::size_t k = 0; k < values.size(); ++k) {
      if (!std::isfinite(values[k])) continue;
      last_x = xs(values.size() == 1 ? 0.5 : k);
      last_y = ys(values[k]);
      if (!points.empty()) points += ' ';
      points += format_coordinate(last_x);
      points += ',';
      points += format_coordinate(last_y);
    }
    out << "<polyline points=\"" << points << "\" fill=\"none\" stroke=\"" << palette_color(0)
        << "\" stroke-width=\"1.3\"/>\n"
        << "<circle cx=\"" << format_coordinate(last_x) << "\" cy=\"" << format_coordinate(last_y)
        << "\" r=\"2\" fill=\"" << palette_color(2) << "\"/>\n";
  }
  out << "</svg>\n";
  return out.str();
}

}  // namespace lpdt::exp::report
