#pragma once
// Pieces of HTML shared by the run and sweep pages (report_page.h). Every function escapes the
// text it is given unless its name says the argument is already HTML.
#include <string>
#include <vector>

namespace lpdt::exp::report {

// The whole page: <!DOCTYPE html>, the inline style sheet, the title and `body_html`.
std::string html_page(const std::string& title, const std::string& body_html);

// <section id=...><h2>heading</h2> content_html </section>
std::string html_section(const std::string& id, const std::string& heading,
                         const std::string& content_html);

// A visible note in place of a section whose input file is missing.
std::string missing_note(const std::string& file, const std::string& what);
// The same for a section drawn from two files of which neither had anything to show: they are
// missing or hold no rows yet (a run in its first epoch).
std::string nothing_yet_note(const std::string& first_file, const std::string& second_file,
                             const std::string& what);

// A table (no header row when `header` is empty); cells of `html_columns` (indices) are
// inserted as HTML, the others escaped.
std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows,
                       const std::vector<std::size_t>& html_columns = {},
                       const std::string& css_class = "data");

// Charts side by side, wrapping on narrow windows.
std::string figure_row(const std::vector<std::string>& svgs);

// A markdown text with pipe tables (the sweep's table-*.md) as HTML: table lines become a
// <table> (the first is the header, the ---|--- line is skipped), other lines paragraphs
// (**bold** kept as <strong>).
std::string markdown_tables_html(const std::string& markdown);

}  // namespace lpdt::exp::report
