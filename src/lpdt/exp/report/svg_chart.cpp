#include "lpdt/exp/report/svg_chart.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "lpdt/exp/report/svg_elements.h"

namespace lpdt::exp::report {
namespace {

constexpr double kTargetTicks = 5;

// 1, 2 or 5 times a power of ten, the step closest above range / kTargetTicks.
double nice_step(double range, bool integer) {
  if (!(range > 0)) return 1;
  const double raw = range / kTargetTicks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / magnitude;
  const double step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * magnitude;
  return integer ? std::max(1.0, std::round(step)) : step;
}

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return "0";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", value);
  std::string s = buffer;
  // "1.255e+07" -> "1.255e7", "1e-05" -> "1e-5".
  const auto e = s.find('e');
  if (e != std::string::npos) {
    std::string mantissa = s.substr(0, e), exponent = s.substr(e + 1);
    const bool negative = exponent[0] == '-';
    exponent.erase(0, exponent.find_first_not_of("+-"));
    exponent.erase(0, std::min(exponent.find_first_not_of('0'), exponent.size() - 1));
    s = mantissa + "e" + (negative ? "-" : "") + exponent;
  }
  return s;
}

std::string format_coordinate(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", value);
  std::string s = buffer;
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

const std::string& palette_color(std::size_t i) {
  static const std::array<std::string, 10> kPalette = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                       "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                       "#9c755f", "#bab0ac"};
  return kPalette[i % kPalette.size()];
}

std::pair<double, double> nice_range(double lo, double hi, bool log, bool integer) {
  if (hi < lo) std::swap(lo, hi);
  if (log) {
    if (!(lo > 0)) lo = hi > 0 ? hi / 10 : 1;
    if (!(hi > 0)) hi = lo * 10;
    double a = std::pow(10.0, std::floor(std::log10(lo) + 1e-9));
    double b = std::pow(10.0, std::ceil(std::log10(hi) - 1e-9));
    if (b <= a) b = a * 10;
    return {a, b};
  }
  if (hi == lo) {
    // A constant series: a band around it, but from 0 where it is 0 (a one-node run's consensus
    // distance, which cannot be negative, drew ticks down to -1).
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    if (lo != 0) lo -= pad;
    hi += pad;
  }
  const double step = nice_step(hi - lo, integer);
  return {std::floor(lo / step + 1e-9) * step, std::ceil(hi / step - 1e-9) * step};
}

Scale::Scale(double lo, double hi, double pixel_lo, double pixel_hi, bool log, bool integer)
    : lo_(lo), hi_(hi), pixel_lo_(pixel_lo), pixel_hi_(pixel_hi), log_(log), integer_(integer) {
  if (log_ && !(lo_ > 0)) lo_ = hi_ > 0 ? hi_ / 1000 : 1;
  if (hi_ == lo_) hi_ = lo_ + 1;
}

double Scale::operator()(double value) const {
  double t;
  if (log_) {
    if (!(value > 0)) return std::numeric_limits<double>::quiet_NaN();
    t = (std::log10(value) - std::log10(lo_)) / (std::log10(hi_) - std::log10(lo_));
  } else {
    t = (value - lo_) / (hi_ - lo_);
  }
  return pixel_lo_ + t * (pixel_hi_ - pixel_lo_);
}

std::vector<double> Scale::ticks() const {
  std::vector<double> ticks;
  const double eps = 1e-9 * (hi_ - lo_);
  if (log_) {
    const bool fine = hi_ / lo_ < 100;
    const int first = static_cast<int>(std::floor(std::log10(lo_)));
    const int last = static_cast<int>(std::ceil(std::log10(hi_)));
    // At most about 8 labelled decades: a wider range labels every stride-th power of ten.
    constexpr int kMostDecades = 8;
    const int stride = std::max(1, (last - first + kMostDecades - 1) / kMostDecades);
    for (int k = first; k <= last; ++k) {
      if (((k % stride) + stride) % stride != 0) continue;
      for (double m : {1.0, 2.0, 5.0}) {
        if (m != 1 && !fine) continue;
        const double v = m * std::pow(10.0, k);
        if (v >= lo_ * (1 - 1e-9) && v <= hi_ * (1 + 1e-9)) ticks.push_back(v);
      }
    }
    return ticks;
  }
  const double step = nice_step(hi_ - lo_, integer_);
  for (double i = std::ceil(lo_ / step - 1e-9);; ++i) {
    double v = i * step;
    if (v > hi_ + eps) break;
    // 3 * 0.2 is 0.6000000000000001: round to the step's decimals (a step below 1 has some).
    if (step < 1) {
      const double scale = std::pow(10.0, std::ceil(-std::log10(step)) + 1);
      v = std::round(v * scale) / scale;
    }
    if (std::abs(v) < step * 1e-9) v = 0;
    ticks.push_back(v);
    if (ticks.size() > 100) break;  // guards against a pathological range
  }
  return ticks;
}

AxisSpec axis(const std::string& label) {
  AxisSpec a;
  a.label = label;
  return a;
}

AxisSpec integer_axis(const std::string& label) {
  AxisSpec a = axis(label);
  a.integer = true;
  return a;
}

LineSeries line_series(const std::string& name) {
  LineSeries s;
  s.name = name;
  return s;
}

std::string svg_open(const std::string& css_class, double width, double height,
                     const std::string& title) {
  const std::string w = format_coordinate(width), h = format_coordinate(height);
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"" + css_class + "\" width=\"" + w +
         "\" height=\"" + h + "\" viewBox=\"0 0 " + w + " " + h + "\" role=\"img\">\n<title>" +
         xml_escape(title) + "</title>\n";
}

std::string svg_text(double x, double y, const std::string& content, const std::string& extra) {
  return "<text x=\"" + format_coordinate(x) + "\" y=\"" + format_coordinate(y) + "\" " + kFont +
         " " + extra + ">" + xml_escape(content) + "</text>\n";
}

std::string chart_title(double width, const std::string& title) {
  return svg_text(width / 2, 22, title,
                  "font-size=\"14\" font-weight=\"bold\" text-anchor=\"middle\"");
}

}  // namespace lpdt::exp::report
