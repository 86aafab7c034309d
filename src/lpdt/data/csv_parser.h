#pragma once
// An RFC 4180 CSV parser: fields separated by ',', records by "\n" or "\r\n"; a field in double
// quotes may hold commas, line breaks and doubled quotes ("" = one "). Spaces right after a comma
// are skipped (Python's csv skipinitialspace, with which the Hugging Face AG News loader reads
// the files). No torch: pure parsing.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lpdt::data {

struct CsvRecord {
  std::vector<std::string> fields;
  int64_t line = 0;  // 1-based line on which the record starts
};

// Every record of `text`; a final line break does not start an empty record, and blank lines
// are skipped. UserError "<what>: line N: ..." for an unterminated quoted field (N = the line
// where it opens), a character other than ',' or a line break after a closing quote, and a '"'
// inside an unquoted field.
std::vector<CsvRecord> parse_csv(std::string_view text, const std::string& what);

}  // namespace lpdt::data
