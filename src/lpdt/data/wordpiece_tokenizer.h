#pragma once
// BERT's uncased tokenizer (Devlin et al. 2019), as Hugging Face's
// BertTokenizer(do_lower_case=True) = BasicTokenizer + WordpieceTokenizer:
//   1. clean: drop U+0000, U+FFFD and control characters (Cc, Cf); whitespace becomes ' '.
//   2. put spaces around every CJK ideograph (unicode::is_cjk), so each is a word.
//   3. split on whitespace; per word: lower-case, NFD, drop non-spacing marks (accents), then
//      split off every punctuation character as a word of its own.
//   4. WordPiece: greedy longest-match-first against the vocabulary, pieces after the first
//      prefixed "##"; a word longer than 100 code points, or one that cannot be covered by
//      pieces, becomes [UNK] as a whole.
// Unicode coverage and its limits: unicode_text.h. Differences from Hugging Face:
// text such as "[CLS]" inside the input is tokenized as ordinary text (Hugging Face would map
// it to the special token), and invalid UTF-8 is replaced and dropped instead of failing
// (unicode::decode_utf8). Python's context-dependent final sigma is not reproduced: a capital
// sigma always lower-cases to U+03C3. Thread-safe: every method is const and keeps no state.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lpdt::data {

class WordPieceTokenizer {
 public:
  // Words longer than this many code points become [UNK] (BERT's max_input_chars_per_word).
  static constexpr int kMaxWordChars = 100;

  // Reads a standard vocab.txt: one token per line ('\n' or "\r\n"), id = line index.
  // UserError naming the file for: a missing or unreadable file, an empty file, an empty line,
  // a duplicate token (both line numbers), a vocabulary without [PAD], [UNK], [CLS] or [SEP].
  static WordPieceTokenizer from_file(const std::string& vocab_path);
  // The same checks on tokens given in memory (id = index); `what` names the source in errors.
  static WordPieceTokenizer from_tokens(std::vector<std::string> tokens,
                                        const std::string& what = "vocabulary");

  // Token ids of `text`, no special tokens.
  std::vector<int32_t> encode(std::string_view text) const;
  // [CLS] ids [SEP], the ids cut to max_length - 2 (so [SEP] is always kept), then [PAD] up to
  // exactly max_length entries. ConfigError if max_length < 2.
  std::vector<int32_t> encode_for_classification(std::string_view text, int64_t max_length) const;
  // The token strings of encode(text) ("un", "##aff", "[UNK]"), for tests and debugging.
  std::vector<std::string> tokenize(std::string_view text) const;
  // Steps 1-3 alone: the lower-cased, accent-stripped, punctuation-split words.
  std::vector<std::string> basic_tokenize(std::string_view text) const;

  int32_t pad_id() const { return pad_id_; }
  int32_t unk_id() const { return unk_id_; }
  int32_t cls_id() const { return cls_id_; }
  int32_t sep_id() const { return sep_id_; }
  int64_t vocab_size() const { return static_cast<int64_t>(tokens_.size()); }
  const std::string& token(int32_t id) const;
  // The id of `token`, or -1.
  int32_t find(std::string_view token) const;

 private:
  // Hash with heterogeneous lookup, so a std::string_view piece needs no copy.
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  WordPieceTokenizer() = default;
  // Appends the WordPiece ids of one basic word (UTF-8) to `out`.
  void wordpiece(const std::string& word, std::vector<int32_t>& out) const;

  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> ids_;
  int32_t pad_id_ = -1;
  int32_t unk_id_ = -1;
  int32_t cls_id_ = -1;
  int32_t sep_id_ = -1;
};

}  // namespace lpdt::data
