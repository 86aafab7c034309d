#include "lpdt/data/wordpiece_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "lpdt/core/error.h"
#include "lpdt/data/unicode_text.h"

namespace lpdt::data {
namespace {

// BasicTokenizer._clean_text + _tokenize_chinese_chars: drops NUL, U+FFFD and control
// characters, turns whitespace into ' ', puts spaces around CJK ideographs.
std::vector<char32_t> clean_text(std::string_view text) {
  const std::vector<char32_t> in = unicode::decode_utf8(text);
  std::vector<char32_t> out;
  out.reserve(in.size());
  for (char32_t cp : in) {
    if (cp == 0 || cp == unicode::kReplacement || unicode::is_control(cp)) continue;
    // U+2028 / U+2029 are not BERT whitespace, but Python's str.split() in the next step
    // (whitespace_tokenize) splits on them, so they separate words too.
    if (unicode::is_whitespace(cp) || cp == 0x2028 || cp == 0x2029) {
      out.push_back(' ');
    } else if (unicode::is_cjk(cp)) {
      out.push_back(' ');
      out.push_back(cp);
      out.push_back(' ');
    } else {
      out.push_back(cp);
    }
  }
  return out;
}

}  // namespace

WordPieceTokenizer WordPieceTokenizer::from_file(const std::string& vocab_path) {
  std::error_code ec;
  const auto status = std::filesystem::status(vocab_path, ec);
  if (std::filesystem::is_directory(status)) {
    throw UserError("wordpiece vocabulary: " + vocab_path +
                    " is a folder (expected a BERT vocab.txt file, one token per line)");
  }
  // A FIFO or a device would block the read: only a plain file is a vocabulary.
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    throw UserError("wordpiece vocabulary: " + vocab_path +
                    " is not a regular file (a FIFO or a device?): expected a BERT vocab.txt "
                    "file, one token per line");
  }
  std::ifstream in(vocab_path, std::ios::binary);
  if (!in) {
    throw UserError("wordpiece vocabulary: " + vocab_path +
                    ": cannot open the file (expected a BERT vocab.txt, one token per line)");
  }
  std::vector<std::string> tokens;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find('\r') != std::string::npos) {
      throw UserError("wordpiece vocabulary: " + vocab_path + ": line " +
                      std::to_string(tokens.size() + 1) +
                      " holds a carriage return inside it: lines ending in a lone carriage return "
                      "(old Mac line endings)? Convert the file to \\n or \\r\\n line endings");
    }
    // A UTF-8 byte order mark (files saved by some editors) is not part of the first token.
    if (tokens.empty() && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    tokens.push_back(line);
  }
  if (in.bad()) throw UserError("wordpiece vocabulary: " + vocab_path + ": read error");
  return from_tokens(std::move(tokens), "wordpiece vocabulary: " + vocab_path);
}

WordPieceTokenizer WordPieceTokenizer::from_tokens(std::vector<std::string> tokens,
                                                   const std::string& what) {
  if (tokens.empty()) {
    throw UserError(what + ": empty vocabulary, expected one token per line");
  }
  WordPieceTokenizer t;
  t.ids_.reserve(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& token = tokens[i];
    if (token.empty()) {
      throw UserError(what + ": line " + std::to_string(i + 1) + " is empty, expected a token");
    }
    const auto [it, inserted] = t.ids_.emplace(token, static_cast<int32_t>(i));
    if (!inserted) {
      throw UserError(what + ": token \"" + printable(token) + "\" on line " +
                      std::to_string(i + 1) +
                      " duplicates line " + std::to_string(it->second + 1));
    }
  }
  t.tokens_ = std::move(tokens);
  const auto special = [&](const char* name) {
    const int32_t id = t.find(name);
    if (id < 0) {
      throw UserError(what + ": the vocabulary has no " + std::string(name) +
                      " token (a BERT vocab.txt has [PAD], [UNK], [CLS] and [SEP])");
    }
    return id;
  };
  t.pad_id_ = special("[PAD]");
  t.unk_id_ = special("[UNK]");
  t.cls_id_ = special("[CLS]");
  t.sep_id_ = special("[SEP]");
  return t;
}

const std::string& WordPieceTokenizer::token(int32_t id) const {
  LPDT_CHECK(id >= 0 && id < static_cast<int32_t>(tokens_.size()),
             "token id " + std::to_string(id) + " outside the vocabulary");
  return tokens_[static_cast<std::size_t>(id)];
}

int32_t WordPieceTokenizer::find(std::string_view token) const {
  const auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

std::vector<std::string> WordPieceTokenizer::basic_tokenize(std::string_view text) const {
  std::vector<std::string> words;
  std::string word;
  const auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (char32_t cp : clean_text(text)) {
    if (cp == ' ') {
      flush();
      continue;
    }
    // Per word: lower(), NFD, drop Mn (BasicTokenizer._run_strip_accents) ...
    if (unicode::is_nonspacing_mark(cp)) continue;
    const unicode::Folded folded = unicode::fold_lower_strip(cp);
    for (int i = 0; i < folded.count; ++i) {
      const char32_t c = folded.code_points[static_cast<std::size_t>(i)];
      // ... then every punctuation character is a word of its own (_run_split_on_punc).
      if (unicode::is_punctuation(c)) {
        flush();
        unicode::append_utf8(word, c);
        flush();
        continue;
      }
      unicode::append_utf8(word, c);
    }
  }
  flush();
  return words;
}

void WordPieceTokenizer::wordpiece(const std::string& word, std::vector<int32_t>& out) const {
  // Code point boundaries of the UTF-8 word: pieces are cut only there.
  std::vector<std::size_t> bounds;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if ((static_cast<unsigned char>(word[i]) & 0xC0) != 0x80) bounds.push_back(i);
  }
  const std::size_t chars = bounds.size();
  bounds.push_back(word.size());
  if (chars > static_cast<std::size_t>(kMaxWordChars)) {
    out.push_back(unk_id_);
    return;
  }
  // WordpieceTokenizer.tokenize: greedy longest-match-first; all or nothing per word.
  const std::size_t first_out = out.size();
  std::string piece;
  std::size_t start = 0;
  while (start < chars) {
    int32_t found = -1;
    std::size_t end = chars;
    for (; end > start; --end) {
      piece.assign(start > 0 ? "##" : "");
      piece.append(word, bounds[start], bounds[end] - bounds[start]);
      found = find(piece);
      if (found >= 0) break;
    }
    if (found < 0) {
      out.resize(first_out);
      out.push_back(unk_id_);
      return;
    }
    out.push_back(found);
    start = end;
  }
}

std::vector<int32_t> WordPieceTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  for (const std::string& word : basic_tokenize(text)) wordpiece(word, ids);
  return ids;
}

std::vector<int32_t> WordPieceTokenizer::encode_for_classification(std::string_view text,
                                                                   int64_t max_length) const {
  if (max_length < 2) {
    throw ConfigError("wordpiece: max_length must be at least 2 ([CLS] and [SEP]), got " +
                      std::to_string(max_length));
  }
  const std::vector<int32_t> ids = encode(text);
  const auto body = std::min<std::size_t>(ids.size(), static_cast<std::size_t>(max_length - 2));
  std::vector<int32_t> out;
  out.reserve(static_cast<std::size_t>(max_length));
  out.push_back(cls_id_);
  out.insert(out.end(), ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(body));
  out.push_back(sep_id_);
  out.resize(static_cast<std::size_t>(max_length), pad_id_);
  return out;
}

std::vector<std::string> WordPieceTokenizer::tokenize(std::string_view text) const {
  std::vector<std::string> out;
  for (int32_t id : encode(text)) out.push_back(tokens_[static_cast<std::size_t>(id)]);
  return out;
}

}  // namespace lpdt::data
