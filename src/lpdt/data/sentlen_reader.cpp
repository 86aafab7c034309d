#include "lpdt/data/sentlen_reader.h"

#include "lpdt/core/error.h"
#include "lpdt/data/file_bytes.h"

namespace lpdt::data {
namespace {

constexpr const char* kWhat = "sentlen";
constexpr const char* kFile = "sentence_length.txt";

// SentEval data README, SentLen: inclusive word-count ranges of bins 0..5.
constexpr int64_t kBinFirst[kSentLenClasses] = {5, 9, 13, 17, 21, 26};
constexpr int64_t kBinLast[kSentLenClasses] = {8, 12, 16, 20, 25, 28};

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

}  // namespace

int64_t sentlen_bin(int64_t word_count) {
  for (int64_t b = 0; b < kSentLenClasses; ++b) {
    if (word_count >= kBinFirst[b] && word_count <= kBinLast[b]) return b;
  }
  return -1;
}

const std::vector<std::string>& sentlen_class_names() {
  static const std::vector<std::string> names = {"5-8", "9-12", "13-16", "17-20", "21-25", "26-28"};
  return names;
}

int64_t count_words(std::string_view sentence) {
  int64_t words = 0;
  bool in_word = false;
  for (char c : sentence) {
    const bool space = is_space(c);
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return words;
}

std::vector<TextSample> read_sentlen(const std::string& path, Split split,
                                     const SentLenOptions& options) {
  const std::string what = std::string(kWhat) + ": " + path;
  const std::vector<std::uint8_t> bytes = read_file_bytes(path, kWhat);
  if (bytes.empty()) throw UserError(what + ": empty file, expected split<TAB>label<TAB>sentence");
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte-order mark
  std::vector<TextSample> samples;
  std::size_t start = 0;
  int64_t line_number = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    const std::string where = what + ": line " + std::to_string(line_number) + ": ";
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\r') != std::string_view::npos) {
      // Read as one line, a file of lone-CR lines would hold one sentence: its last.
      throw UserError(where +
                      "holds a carriage return inside it: lines ending in a lone "
                      "carriage return (old Mac line endings)? Convert the file to \\n "
                      "or \\r\\n line endings");
    }
    // Trailing white space goes before the fields are split, as SentEval strips each line:
    // a line ending in a tab would otherwise have an empty sentence as its last field.
    while (!line.empty() && is_space(line.back())) line.remove_suffix(1);
    // Fields: split, label, ..., sentence (the last field), as SentEval reads them.
    std::vector<std::string_view> fields;
    for (std::size_t p = 0;;) {
      const std::size_t tab = line.find('\t', p);
      fields.push_back(line.substr(p, tab == std::string_view::npos ? line.npos : tab - p));
      if (tab == std::string_view::npos) break;
      p = tab + 1;
    }
    if (fields.size() < 3) {
      throw UserError(where + std::to_string(fields.size()) +
                      " tab-separated field(s), expected 3: split<TAB>label<TAB>sentence");
    }
    const std::string_view split_field = fields[0];
    bool wanted;
    if (split_field == "tr") {
      wanted = split == Split::kTrain;
    } else if (split_field == "va") {
      wanted = split == Split::kTrain && options.validation_in_train_;
    } else if (split_field == "te") {
      wanted = split == Split::kTest;
    } else {
      throw UserError(where + "split \"" + printable(split_field) +
                      "\" is not one of tr, va, te");
    }
    const std::string_view label_field = fields[1];
    if (label_field.size() != 1 || label_field[0] < '0' ||
        label_field[0] >= '0' + kSentLenClasses) {
      throw UserError(where + "label \"" + printable(label_field) +
                      "\" is not a length bin 0..5");
    }
    const int64_t file_label = label_field[0] - '0';
    const std::string_view sentence = fields.back();
    int64_t label = file_label;
    if (options.labels_ != SentLenLabels::kFile) {
      const int64_t words = count_words(sentence);
      const int64_t bin = sentlen_bin(words);
      if (bin < 0) {
        throw UserError(where + "the sentence has " + std::to_string(words) +
                        " words, outside every length bin (5..28)");
      }
      if (options.labels_ == SentLenLabels::kVerify && bin != file_label) {
        throw UserError(where + "label " + std::to_string(file_label) + " but the sentence has " +
                        std::to_string(words) + " words, which is bin " + std::to_string(bin) +
                        " (" + sentlen_class_names()[static_cast<std::size_t>(bin)] + ")");
      }
      label = bin;
    }
    if (wanted) samples.push_back(TextSample{std::string(sentence), label});
  }
  // A split without rows would train on nothing, or evaluate on nothing and report 0%.
  if (samples.empty()) {
    throw UserError(what + ": no line of the " +
                    (split == Split::kTest ? std::string("test split (te)")
                                           : options.validation_in_train_
                                                 ? std::string("training splits (tr, va)")
                                                 : std::string("training split (tr)")) +
                    ", expected lines split<TAB>label<TAB>sentence of it");
  }
  return samples;
}

TextDataset load_sentlen(const std::string& dir, Split split, const WordPieceTokenizer& tokenizer,
                         int64_t max_length, const SentLenOptions& options) {
  std::string path = join_path(dir, kFile);
  if (find_plain_or_gz(path).empty()) {
    const std::string nested = join_path(join_path(dir, "probing"), kFile);
    if (!find_plain_or_gz(nested).empty()) path = nested;
  }
  const std::string found = find_plain_or_gz(path);
  if (found.empty()) {
    throw UserError(std::string(kWhat) + ": " + path + ": no such file (nor " + kFile +
                    ".gz); pass the folder of SentEval's data/probing");
  }
  return build_text_dataset("sentlen", read_sentlen(found, split, options), tokenizer, max_length,
                            sentlen_class_names());
}

}  // namespace lpdt::data
