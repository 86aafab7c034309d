#include "lpdt/data/csv_parser.h"

#include "lpdt/core/error.h"

namespace lpdt::data {

std::vector<CsvRecord> parse_csv(std::string_view text, const std::string& what) {
  std::vector<CsvRecord> records;
  const std::size_t n = text.size();
  // A UTF-8 byte order mark, as spreadsheet programs save CSV files, is not text.
  std::size_t i = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  int64_t line = 1;
  const auto fail = [&](int64_t at, const std::string& message) {
    throw UserError(what + ": line " + std::to_string(at) + ": " + message);
  };
  const auto at_line_end = [&](std::size_t p) {
    return p >= n || text[p] == '\n' || (text[p] == '\r' && p + 1 < n && text[p + 1] == '\n');
  };
  // Consumes the line break at i (if any) and counts it.
  const auto skip_line_end = [&] {
    if (i < n && text[i] == '\r') ++i;
    if (i < n && text[i] == '\n') ++i, ++line;
  };
  while (i < n) {
    if (at_line_end(i)) {  // blank line
      skip_line_end();
      continue;
    }
    CsvRecord record;
    record.line = line;
    bool after_comma = false;
    while (true) {
      if (after_comma) {
        while (i < n && text[i] == ' ') ++i;  // skipinitialspace
      }
      const std::size_t p = i;
      std::string field;
      if (p < n && text[p] == '"') {
        const int64_t open_line = line;
        i = p + 1;
        while (true) {
          if (i >= n) fail(open_line, "unterminated quoted field (no closing '\"')");
          const char c = text[i];
          if (c == '"') {
            if (i + 1 < n && text[i + 1] == '"') {
              field.push_back('"');
              i += 2;
              continue;
            }
            ++i;
            break;
          }
          if (c == '\n') ++line;
          field.push_back(c);
          ++i;
        }
        if (!(at_line_end(i) || text[i] == ',')) {
          // A lone CR ends lines only in files of classic Mac OS.
          fail(line, "unexpected character '" + printable(text.substr(i, 1)) +
                         "' after a closing quote, expected ',' or the end of the line" +
                         (text[i] == '\r' ? " (lines ending in a lone carriage return: convert "
                                            "the file to \\n or \\r\\n line endings)"
                                          : ""));
        }
      } else {
        while (!at_line_end(i) && text[i] != ',') {
          if (text[i] == '"') fail(line, "'\"' inside an unquoted field (quote the field)");
          if (text[i] == '\r') {  // not before \n: at_line_end
            fail(line,
                 "a carriage return inside an unquoted field: lines ending in a lone "
                 "carriage return (old Mac line endings)? Convert the file to \\n or "
                 "\\r\\n line endings");
          }
          field.push_back(text[i]);
          ++i;
        }
      }
      record.fields.push_back(std::move(field));
      if (i < n && text[i] == ',') {
        ++i;
        after_comma = true;
        continue;
      }
      skip_line_end();
      break;
    }
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace lpdt::data
