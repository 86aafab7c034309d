#include "lpdt/exp/report/report_page.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "lpdt/core/error.h"
#include "lpdt/exp/report/report_html.h"
#include "lpdt/exp/report/svg_chart.h"
#include "lpdt/exp/run_folder.h"

namespace lpdt::exp::report {
namespace {

namespace fs = std::filesystem;

const char* const kStyle = R"(
body { font-family: sans-serif; margin: 24px auto; max-width: 1360px; padding: 0 16px;
       color: #222; background: #fafafa; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 17px; border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 28px; }
section { margin-bottom: 12px; }
.sub { color: #666; margin-top: 0; font-size: 13px; }
.figs { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
.figs svg, section > svg { background: white; border: 1px solid #e2e2e2; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; background: white; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: middle; }
th { background: #f0f0f0; }
table.kv { min-width: 640px; }
table.kv th { width: 220px; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.missing { color: #7a5b00; background: #fff6d6; border: 1px solid #f0dc9c; padding: 6px 10px;
           font-size: 13px; display: inline-block; }
.note { color: #555; font-size: 13px; }
footer { color: #888; font-size: 12px; margin-top: 32px; }
)";

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const auto end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

// A markdown table line's cells: "| a | b |" -> {"a", "b"}.
std::vector<std::string> table_cells(const std::string& line) {
  std::string body = trim(line);
  if (!body.empty() && body.front() == '|') body.erase(0, 1);
  if (!body.empty() && body.back() == '|') body.pop_back();
  std::vector<std::string> cells;
  std::stringstream in(body);
  std::string cell;
  while (std::getline(in, cell, '|')) cells.push_back(trim(cell));
  return cells;
}

bool is_separator(const std::string& line) {
  return trim(line).find_first_not_of("|-: ") == std::string::npos;
}

// Escaped text with **bold** as <strong>.
std::string inline_markdown(const std::string& text) {
  std::string escaped = xml_escape(text), out;
  bool open = false;
  for (std::size_t i = 0; i < escaped.size(); ++i) {
    if (escaped.compare(i, 2, "**") == 0 &&
        (open || escaped.find("**", i + 2) != std::string::npos)) {
      out += open ? "</strong>" : "<strong>";
      open = !open;
      ++i;
    } else {
      out += escaped[i];
    }
  }
  return out;
}

}  // namespace

std::string html_page(const std::string& title, const std::string& body_html) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
         xml_escape(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n" +
         body_html +
         "<footer>Written by lpdt report (docs/reports.md).</footer>\n</body>\n</html>\n";
}

std::string html_section(const std::string& id, const std::string& heading,
                         const std::string& content_html) {
  return "<section id=\"" + xml_escape(id) + "\">\n<h2>" + xml_escape(heading) + "</h2>\n" +
         content_html + "</section>\n";
}

std::string missing_note(const std::string& file, const std::string& what) {
  return "<p class=\"missing\">" + xml_escape(file) + " is missing: no " + xml_escape(what) +
         ".</p>\n";
}

std::string nothing_yet_note(const std::string& first_file, const std::string& second_file,
                             const std::string& what) {
  return "<p class=\"missing\">No " + xml_escape(what) + ": " + xml_escape(first_file) + " and " +
         xml_escape(second_file) + " are missing or hold no rows yet.</p>\n";
}

std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows,
                       const std::vector<std::size_t>& html_columns, const std::string& css_class) {
  std::string out = "<table class=\"" + xml_escape(css_class) + "\">\n";
  if (!header.empty()) {
    out += "<tr>";
    for (const auto& h : header) out += "<th>" + xml_escape(h) + "</th>";
    out += "</tr>\n";
  }
  for (const auto& row : rows) {
    out += "<tr>";
    for (std::size_t c = 0; c < row.size(); ++c) {
      const bool html =
          std::find(html_columns.begin(), html_columns.end(), c) != html_columns.end();
      out += "<td>" + (html ? row[c] : xml_escape(row[c])) + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string figure_row(const std::vector<std::string>& svgs) {
  std::string out = "<div class=\"figs\">\n";
  for (const auto& svg : svgs) out += svg;
  return out + "</div>\n";
}

std::string markdown_tables_html(const std::string& markdown) {
  std::string out;
  std::vector<std::string> lines;
  std::stringstream in(markdown);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  for (std::size_t i = 0; i < lines.size();) {
    const std::string line = trim(lines[i]);
    if (line.empty()) {
      ++i;
      continue;
    }
    if (line.front() != '|') {
      out += "<p>" + inline_markdown(line) + "</p>\n";
      ++i;
      continue;
    }
    out += "<table class=\"data\">\n";
    bool header = true;
    for (; i < lines.size() && !trim(lines[i]).empty() && trim(lines[i]).front() == '|'; ++i) {
      if (is_separator(lines[i])) continue;
      out += "<tr>";
      for (const auto& cell : table_cells(lines[i])) {
        out += (header ? "<th>" : "<td>") + inline_markdown(cell) + (header ? "</th>" : "</td>");
      }
      out += "</tr>\n";
      header = false;
    }
    out += "</table>\n";
  }
  return out;
}

fs::path write_report(const fs::path& dir, const std::optional<fs::path>& out) {
  if (!fs::is_directory(dir)) {
    throw UserError("'" + dir.string() +
                    "' is not a folder: expected a run folder (with "
                    "summary.json or metrics.csv) or a sweep folder (with a runs/ subfolder)");
  }
  std::string html;
  if (is_run_folder(dir)) {
    html = run_report_html(read_run(dir));
  } else if (is_sweep_folder(dir)) {
    html = sweep_report_html(read_sweep(dir));
  } else {
    throw UserError("'" + dir.string() +
                    "' is neither a run folder (expected summary.json or "
                    "metrics.csv in it) nor a sweep folder (expected a runs/ subfolder of run "
                    "folders)");
  }
  const fs::path path = out.value_or(dir / "report.html");
  // Written next to its final name and renamed: a reader never sees half a page.
  write_text_file(path, html);
  return path;
}

}  // namespace lpdt::exp::report
