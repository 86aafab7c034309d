// WordPiece tokenizer: known BERT tokenizations (expected tokens printed by
// tests/data/tools/wordpiece_reference.py, a transcription of Hugging Face's BasicTokenizer +
// WordpieceTokenizer over Python's full unicodedata), vocab errors, classification encoding.
#include "lpdt/data/wordpiece_tokenizer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "lpdt/core/error.h"
#include "lpdt/data/unicode_text.h"
#include "test_util.h"

namespace lpdt::data {
namespace {

using testing::expect_error;
using testing::TempDir;
using Tokens = std::vector<std::string>;

// The vocabulary of wordpiece_reference.py (id = index).
const Tokens kVocab = {"[PAD]", "[UNK]", "[CLS]",  "[SEP]",    "the",     ",",   ".",
                       "un",    "##aff", "##able", "hello",    "world",   "##s", "play",
                       "##ing", "cafe",  "naive",  "中",       "文",      "æ",   "ss",
                       "ß",     "e",     "i",      "istanbul", "##world", "“",   "”",
                       "—",     "…",     "‘",      "’",        "¿"};

void write_vocab(const std::string& path, const Tokens& tokens, const std::string& eol = "\n") {
  std::ofstream out(path, std::ios::binary);
  for (const auto& t : tokens) out << t << eol;
}

WordPieceTokenizer make_tokenizer() { return WordPieceTokenizer::from_tokens(kVocab); }

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(WordPiece, ReadsVocabFileWithIdsByLine) {
  TempDir dir;
  write_vocab(dir.file("vocab.txt"), kVocab, "\r\n");
  const auto t = WordPieceTokenizer::from_file(dir.file("vocab.txt"));
  EXPECT_EQ(t.vocab_size(), static_cast<int64_t>(kVocab.size()));
  EXPECT_EQ(t.pad_id(), 0);
  EXPECT_EQ(t.unk_id(), 1);
  EXPECT_EQ(t.cls_id(), 2);
  EXPECT_EQ(t.sep_id(), 3);
  EXPECT_EQ(t.find("##aff"), 8);
  EXPECT_EQ(t.find("nope"), -1);
  EXPECT_EQ(t.token(10), "hello");
  EXPECT_EQ(t.encode("UNaffable Hello, world!"), (std::vector<int32_t>{7, 8, 9, 10, 5, 11, 1}));
}

TEST(WordPiece, KnownTokenizations) {
  const auto t = make_tokenizer();
  const std::vector<std::pair<std::string, Tokens>> cases = {
      {"UNaffable Hello, world!", {"un", "##aff", "##able", "hello", ",", "world", "[UNK]"}},
      {"Héllo", {"hello"}},
      {"unknownword", {"[UNK]"}},
      {"中文abc文", {"中", "文", "[UNK]", "文"}},
      {"plays playing", {"play", "##s", "play", "##ing"}},
      {"Café naïve Æ SS ß ¿HELLO?", {"cafe", "naive", "æ", "ss", "ß", "¿", "hello", "[UNK]"}},
      {"“Hello” — world… ‘the’", {"“", "hello", "”", "—", "world", "…", "‘", "the", "’"}},
      // no-break space and ideographic space split; zero-width space and soft hyphen are Cf
      // (dropped, so the words join).
      {"hello\u00a0world\u3000the\u200bworld\u00adplay", {"hello", "world", "[UNK]"}},
      // A decomposed accent (e + U+0301) and dotted capital I (lower() gives i + U+0307).
      {"e\u0301 \u0130stanbul", {"e", "istanbul"}},
      {"\tHELLO\r\nWORLD\x01\x7f", {"hello", "world"}},
      {"", {}},
      {" \t\n ", {}},
  };
  for (const auto& [text, expected] : cases) {
    EXPECT_EQ(t.tokenize(text), expected) << text;
  }
}

TEST(WordPiece, MaxWordLengthIs100CodePoints) {
  const auto t = make_tokenizer();
  // 100 characters are still split into pieces; 101 are [UNK] whatever the vocabulary.
  Tokens hundred = {"world"};
  for (int i = 1; i < 20; ++i) hundred.push_back("##world");
  EXPECT_EQ(t.tokenize(repeat("world", 20)), hundred);
  EXPECT_EQ(t.tokenize(repeat("world", 20) + "s"), Tokens{"[UNK]"});
  EXPECT_EQ(t.tokenize(repeat("a", 101)), Tokens{"[UNK]"});
  // Code points, not bytes: 100 two-byte characters are one word of 100.
  const auto latin =
      WordPieceTokenizer::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "ð", "##ð"});
  EXPECT_EQ(latin.tokenize(repeat("ð", 100)).size(), 100u);
  EXPECT_EQ(latin.tokenize(repeat("ð", 101)), Tokens{"[UNK]"});
}

TEST(WordPiece, InvalidUtf8NeverThrows) {
  const auto t = make_tokenizer();
  // Stray continuation byte, truncated sequence, overlong '/', surrogate, > U+10FFFF, 0xFF:
  // replaced by U+FFFD, which BERT drops.
  EXPECT_EQ(t.tokenize("hel\x80lo"), Tokens{"hello"});
  EXPECT_EQ(t.tokenize("hello \xE4\xB8"), Tokens{"hello"});
  EXPECT_EQ(t.tokenize("the\xC0\xAF"), Tokens{"the"});
  EXPECT_EQ(t.tokenize("the \xED\xA0\x80 world"), (Tokens{"the", "world"}));
  EXPECT_EQ(t.tokenize("\xF4\x90\x80\x80the\xFF"), Tokens{"the"});
  EXPECT_EQ(t.tokenize(std::string("the\0world", 9)), (Tokens{"the", "##world"}));  // NUL dropped
}

TEST(WordPiece, Utf8DecoderRoundTrip) {
  const std::string text = "a\u00e9\u4e2d\U0001F600";
  const auto cps = unicode::decode_utf8(text);
  ASSERT_EQ(cps, (std::vector<char32_t>{'a', 0xE9, 0x4E2D, 0x1F600}));
  std::string back;
  for (char32_t cp : cps) unicode::append_utf8(back, cp);
  EXPECT_EQ(back, text);
  EXPECT_EQ(unicode::decode_utf8("\xE4\xB8"),
            (std::vector<char32_t>{unicode::kReplacement, unicode::kReplacement}));
}

// fold_lower_strip's code points as a string.
std::u32string folded(char32_t cp) {
  const unicode::Folded f = unicode::fold_lower_strip(cp);
  return std::u32string(f.code_points.begin(), f.code_points.begin() + f.count);
}

TEST(WordPiece, CharacterClassesAgreeWithUnicode) {
  EXPECT_TRUE(unicode::is_punctuation('$'));      // BERT counts all ASCII non-alphanumerics
  EXPECT_TRUE(unicode::is_punctuation(0x2014));   // em dash, Pd
  EXPECT_FALSE(unicode::is_punctuation(0x20AC));  // euro sign, Sc
  EXPECT_FALSE(unicode::is_punctuation('a'));
  EXPECT_TRUE(unicode::is_whitespace(0x2009));  // thin space, Zs
  EXPECT_TRUE(unicode::is_control(0xFEFF));     // byte order mark, Cf
  EXPECT_FALSE(unicode::is_control('\n'));
  EXPECT_TRUE(unicode::is_cjk(0x4E00));
  EXPECT_FALSE(unicode::is_cjk(0x3042));  // hiragana
  EXPECT_TRUE(unicode::is_nonspacing_mark(0x0301));
  EXPECT_EQ(folded(U'Ž'), std::u32string{U'z'});
  EXPECT_EQ(folded(U'Ș'), std::u32string{U's'});
  EXPECT_EQ(folded(U'Ω'), std::u32string{U'ω'});
  EXPECT_EQ(folded(U'Ё'), std::u32string{U'е'});
  EXPECT_EQ(folded(U'Ế'), std::u32string{U'e'});
  EXPECT_EQ(folded(U'Ø'), std::u32string{U'ø'});  // no decomposition
  EXPECT_EQ(folded(U'ł'), std::u32string{U'ł'});
  // Beyond Latin, Greek and Cyrillic (Python's lower() + NFD + dropping Mn): Greek Extended,
  // fullwidth Latin, kana with a voicing mark, a CJK compatibility ideograph (to the unified one,
  // above U+FFFF for some), a two-part vowel sign, Hangul syllables with and without a final
  // consonant (their jamo).
  EXPECT_EQ(folded(0x1F08), std::u32string{0x03B1});   // capital alpha with psili -> alpha
  EXPECT_EQ(folded(0xFF21), std::u32string{0xFF41});   // fullwidth A -> fullwidth a
  EXPECT_EQ(folded(0x304C), std::u32string{0x304B});   // ga -> ka
  EXPECT_EQ(folded(0x30D1), std::u32string{0x30CF});   // katakana pa -> ha
  EXPECT_EQ(folded(0xF900), std::u32string{0x8C48});
  EXPECT_EQ(folded(0xFA6C), std::u32string{0x242EE});
  EXPECT_EQ(folded(0x09CB), (std::u32string{0x09C7, 0x09BE}));  // Bengali vowel sign o
  EXPECT_EQ(folded(0xD55C), (std::u32string{0x1112, 0x1161, 0x11AB}));  // han
  EXPECT_EQ(folded(0xD558), (std::u32string{0x1112, 0x1161}));          // ha
  EXPECT_EQ(folded(0xAC00), (std::u32string{0x1100, 0x1161}));          // ga, the first
  EXPECT_EQ(folded(0xD7A3), (std::u32string{0x1112, 0x1175, 0x11C2}));  // the last
  // Hugging Face drops every C* category: private use (Co) and unassigned (Cn) too.
  EXPECT_TRUE(unicode::is_control(0xE000));
  EXPECT_TRUE(unicode::is_control(0x0378));
  EXPECT_FALSE(unicode::is_control(0x0377));  // assigned, Ll
  EXPECT_TRUE(unicode::is_nonspacing_mark(0x3099));   // the voicing mark
  EXPECT_TRUE(unicode::is_punctuation(0x0F04));       // Tibetan mark, Po
}

TEST(WordPiece, HangulKanaAndPrivateUseAsHuggingFace) {
  const auto t = WordPieceTokenizer::from_tokens(
      {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "abc", "x", "##y", "\u304b", "\u1112", "##\u1161",
       "##\u11ab"});
  EXPECT_EQ(t.tokenize("\u304c"), Tokens{"\u304b"});                          // ga -> ka
  EXPECT_EQ(t.tokenize("\ud55c"), (Tokens{"\u1112", "##\u1161", "##\u11ab"}));  // han
  EXPECT_EQ(t.tokenize("abc\ue000"), Tokens{"abc"});   // private use dropped
  EXPECT_EQ(t.tokenize("x\u0378y"), (Tokens{"x", "##y"}));  // unassigned dropped
}

TEST(WordPiece, ClassificationEncodingTruncatesAndPads) {
  const auto t = make_tokenizer();
  // hello , world -> [CLS] 10 5 11 [SEP] then [PAD].
  EXPECT_EQ(t.encode_for_classification("Hello, world", 8),
            (std::vector<int32_t>{2, 10, 5, 11, 3, 0, 0, 0}));
  EXPECT_EQ(t.encode_for_classification("Hello, world", 5),
            (std::vector<int32_t>{2, 10, 5, 11, 3}));
  // Truncation keeps [SEP] last.
  EXPECT_EQ(t.encode_for_classification("Hello, world", 4), (std::vector<int32_t>{2, 10, 5, 3}));
  EXPECT_EQ(t.encode_for_classification("Hello, world", 2), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(t.encode_for_classification("", 4), (std::vector<int32_t>{2, 3, 0, 0}));
  expect_error<ConfigError>([&] { t.encode_for_classification("x", 1); },
                            {"max_length", "at least 2", "got 1"});
}

// A byte order mark before the first token (some editors write one) is not part of it.
TEST(WordPiece, VocabularyWithAByteOrderMark) {
  TempDir dir;
  write_vocab(dir.file("bom.txt"), {"\xEF\xBB\xBF[PAD]", "[UNK]", "[CLS]", "[SEP]", "the"});
  const auto tokenizer = WordPieceTokenizer::from_file(dir.file("bom.txt"));
  EXPECT_EQ(tokenizer.pad_id(), 0);
  EXPECT_EQ(tokenizer.token(0), "[PAD]");
}

TEST(WordPiece, VocabularyErrors) {
  TempDir dir;
  expect_error<UserError>([&] { WordPieceTokenizer::from_file(dir.file("missing.txt")); },
                          {"missing.txt", "cannot open"});
  write_vocab(dir.file("empty.txt"), {});
  expect_error<UserError>([&] { WordPieceTokenizer::from_file(dir.file("empty.txt")); },
                          {"empty.txt", "empty vocabulary"});
  write_vocab(dir.file("dup.txt"), {"[PAD]", "[UNK]", "the", "[CLS]", "the", "[SEP]"});
  expect_error<UserError>([&] { WordPieceTokenizer::from_file(dir.file("dup.txt")); },
                          {"dup.txt", "\"the\"", "line 5", "duplicates line 3"});
  // Control bytes of a damaged file are quoted escaped, never sent raw to the terminal.
  write_vocab(dir.file("binary.txt"), {"[PAD]", "[UNK]", "\x1B[31m", "[CLS]", "\x1B[31m", "[SEP]"});
  expect_error<UserError>([&] { WordPieceTokenizer::from_file(dir.file("binary.txt")); },
                          {"binary.txt", "\"\\x1B[31m\"", "line 5"});
  // Old Mac line endings: one line holding every token, named as such.
  write_vocab(dir.file("cr.txt"), {"[PAD]", "[UNK]", "[CLS]", "[SEP]"}, "\r");
  expect_error<UserError>([&] { WordPieceTokenizer::from_file(dir.file("cr.txt")); },
                          {"cr.txt", "line 1 holds a carriage return", "lone carriage return"});
  // A FIFO would block the read forever.
  ASSERT_EQ(::mkfifo(dir.file("vocab.fifo").c_str(), 0600), 0);
  expect_error<UserError>([&] { WordPieceTokenizer::from_file(dir.file("vocab.fifo")); },
                          {"vocab.fifo", "is not a regular file"});
  write_vocab(dir.file("blank.txt"), {"[PAD]", "[UNK]", "", "[CLS]", "[SEP]"});
  expect_error<UserError>([&] { WordPieceTokenizer::from_file(dir.file("blank.txt")); },
                          {"blank.txt", "line 3 is empty"});
  for (const std::string missing : {"[PAD]", "[UNK]", "[CLS]", "[SEP]"}) {
    Tokens tokens;
    for (const std::string s : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "the"}) {
      if (s != missing) tokens.push_back(s);
    }
    write_vocab(dir.file("nospecial.txt"), tokens);
    expect_error<UserError>([&] { WordPieceTokenizer::from_file(dir.file("nospecial.txt")); },
                            {"nospecial.txt", "no " + missing + " token"});
  }
}

}  // namespace
}  // namespace lpdt::data
