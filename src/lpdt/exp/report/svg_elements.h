#pragma once
// SVG pieces shared by the chart writers (svg_chart.h): the opening tag and a text element.
#include <string>

namespace lpdt::exp::report {

inline const std::string kFont = "font-family=\"sans-serif\"";

// <svg ...> with xmlns, class, width, height, viewBox and the <title> element.
std::string svg_open(const std::string& css_class, double width, double height,
                     const std::string& title);
// <text x y font ...extra>content</text>, content escaped; `extra` is raw attributes.
std::string svg_text(double x, double y, const std::string& content, const std::string& extra);
// The chart's title, centred at the top.
std::string chart_title(double width, const std::string& title);

}  // namespace lpdt::exp::report
