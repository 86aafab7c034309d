#include "lpdt/data/ag_news_reader.h"

#include <filesystem>

#include "lpdt/core/error.h"
#include "lpdt/data/csv_parser.h"
#include "lpdt/data/file_bytes.h"

namespace lpdt::data {
namespace {

constexpr const char* kWhat = "ag-news";

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

std::string handle_backslashes(std::string s, AgNewsBackslash mode) {
  if (mode == AgNewsBackslash::kSpace) {
    for (char& c : s) {
      if (c == '\\') c = ' ';
    }
  }
  return s;
}

}  // namespace

const std::vector<std::string>& ag_news_class_names() {
  static const std::vector<std::string> names = {"World", "Sports", "Business", "Sci/Tech"};
  return names;
}

std::vector<TextSample> read_ag_news_csv(const std::string& path, AgNewsBackslash backslash) {
  const std::string what = std::string(kWhat) + ": " + path;
  const std::vector<std::uint8_t> bytes = read_file_bytes(path, kWhat);
  if (bytes.empty()) throw UserError(what + ": empty file, expected CSV rows");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const std::vector<CsvRecord> records = parse_csv(text, what);
  if (records.empty()) throw UserError(what + ": no rows, expected CSV rows");
  std::vector<TextSample> samples;
  samples.reserve(records.size());
  for (const CsvRecord& r : records) {
    const std::string where = what + ": line " + std::to_string(r.line) + ": ";
    if (r.fields.size() != 3) {
      throw UserError(where + std::to_string(r.fields.size()) +
                      " field(s), expected 3 (\"class index\",\"title\",\"description\")");
    }
    const std::string& index = r.fields[0];
    if (index.size() != 1 || index[0] < '1' || index[0] > '0' + kAgNewsClasses) {
      throw UserError(where + "class index \"" + printable(index) + "\" is not one of 1, 2, 3, 4");
    }
    samples.push_back(TextSample{handle_backslashes(r.fields[1] + " " + r.fields[2], backslash),
                                 static_cast<int64_t>(index[0] - '1')});
  }
  return samples;
}

TextDataset load_ag_news(const std::string& dir, Split split, const WordPieceTokenizer& tokenizer,
                         int64_t max_length, AgNewsBackslash backslash) {
  const std::string file = split == Split::kTrain ? "train.csv" : "test.csv";
  std::string path = join_path(dir, file);
  if (find_plain_or_gz(path).empty()) {
    const std::string nested = join_path(join_path(dir, "ag_news_csv"), file);
    if (!find_plain_or_gz(nested).empty()) path = nested;
  }
  const std::string found = find_plain_or_gz(path);
  if (found.empty()) {
    throw UserError(std::string(kWhat) + ": " + path + ": no such file (nor " + file +
                    ".gz); pass the folder of the ag_news_csv archive's train.csv / test.csv");
  }
  return build_text_dataset("ag-news", read_ag_news_csv(found, backslash), tokenizer, max_length,
                            ag_news_class_names());
}

}  // namespace lpdt::data
