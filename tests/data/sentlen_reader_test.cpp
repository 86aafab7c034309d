// SentEval SentLen reader: bins at every boundary, splits, label verification, every error.
#include "lpdt/data/sentlen_reader.h"

#include <gtest/gtest.h>

#include "lpdt/core/error.h"
#include "test_util.h"

namespace lpdt::data {
namespace {

using testing::expect_error;
using testing::TempDir;

void write_text(const std::string& path, const std::string& text) {
  testing::write_bytes(path, std::vector<std::uint8_t>(text.begin(), text.end()));
}

// A sentence of n words "w0 w1 ...".
std::string words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? " w" : "w") + std::to_string(i);
  return s;
}

TEST(SentLen, BinsAtEveryBoundary) {
  // SentEval data README: 0: 5-8, 1: 9-12, 2: 13-16, 3: 17-20, 4: 21-25, 5: 26-28.
  const std::vector<std::pair<int64_t, int64_t>> expected = {
      {4, -1}, {5, 0},  {8, 0},  {9, 1},  {12, 1}, {13, 2},  {16, 2}, {17, 3},
      {20, 3}, {21, 4}, {25, 4}, {26, 5}, {28, 5}, {29, -1}, {0, -1}};
  for (const auto& [count, bin] : expected) EXPECT_EQ(sentlen_bin(count), bin) << count;
  // Every count 5..28 has a bin, and bins never decrease.
  int64_t last = 0;
  for (int64_t c = 5; c <= 28; ++c) {
    EXPECT_GE(sentlen_bin(c), last);
    last = sentlen_bin(c);
  }
  EXPECT_EQ(sentlen_class_names().size(), 6u);
}

TEST(SentLen, CountsWhitespaceSeparatedWords) {
  EXPECT_EQ(count_words(""), 0);
  EXPECT_EQ(count_words("  a  b\tc "), 3);
  EXPECT_EQ(count_words("He said , \" no . \""), 7);  // Moses tokens: punctuation counts
  EXPECT_EQ(count_words(words(17)), 17);
}

TEST(SentLen, ReadsSplits) {
  TempDir dir;
  write_text(dir.file("sentence_length.txt"), "tr\t0\t" + words(5) + "\n" + "tr\t5\t" + words(28) +
                                                  "\r\n" + "va\t1\t" + words(9) + "\n" + "te\t3\t" +
                                                  words(20) + "\n");
  const auto train = read_sentlen(dir.file("sentence_length.txt"), Split::kTrain);
  ASSERT_EQ(train.size(), 2u);
  EXPECT_EQ(train[0].label, 0);
  EXPECT_EQ(train[0].text, words(5));
  EXPECT_EQ(train[1].label, 5);
  EXPECT_EQ(train[1].text, words(28));  // "\r" stripped
  const auto with_va = read_sentlen(dir.file("sentence_length.txt"), Split::kTrain,
                                    SentLenOptions().validation_in_train(true));
  ASSERT_EQ(with_va.size(), 3u);
  EXPECT_EQ(with_va[2].label, 1);
  const auto test = read_sentlen(dir.file("sentence_length.txt"), Split::kTest,
                                 SentLenOptions().labels(SentLenLabels::kVerify));
  ASSERT_EQ(test.size(), 1u);
  EXPECT_EQ(test[0].label, 3);
  // Trailing white space goes before the split on tabs, as SentEval's rstrip(): a line that ends
  // in a tab keeps its sentence (not an empty last field).
  write_text(dir.file("trailing.txt"),
             "tr\t0\t" + words(5) + "\t\n" + "tr\t1\t" + words(9) + " \t \r\n");
  const auto trailing = read_sentlen(dir.file("trailing.txt"), Split::kTrain);
  ASSERT_EQ(trailing.size(), 2u);
  EXPECT_EQ(trailing[0].text, words(5));
  EXPECT_EQ(trailing[1].text, words(9));
  // A UTF-8 byte-order mark before the first line is not part of its split field.
  write_text(dir.file("bom.txt"), "\xEF\xBB\xBFtr\t0\t" + words(5) + "\n");
  ASSERT_EQ(read_sentlen(dir.file("bom.txt"), Split::kTrain).size(), 1u);
}

TEST(SentLen, RecomputesOrVerifiesLabels) {
  TempDir dir;
  // The file says bin 1 for a 13-word sentence (bin 2).
  write_text(dir.file("s.txt"), "tr\t0\t" + words(6) + "\ntr\t1\t" + words(13) + "\n");
  EXPECT_EQ(read_sentlen(dir.file("s.txt"), Split::kTrain)[1].label, 1);
  const auto recomputed = read_sentlen(dir.file("s.txt"), Split::kTrain,
                                       SentLenOptions().labels(SentLenLabels::kRecompute));
  EXPECT_EQ(recomputed[1].label, 2);
  expect_error<UserError>(
      [&] {
        read_sentlen(dir.file("s.txt"), Split::kTrain,
                     SentLenOptions().labels(SentLenLabels::kVerify));
      },
      {"sentlen", "s.txt", "line 2", "label 1", "13 words", "bin 2", "13-16"});
  write_text(dir.file("short.txt"), "tr\t0\t" + words(4) + "\n");
  expect_error<UserError>(
      [&] {
        read_sentlen(dir.file("short.txt"), Split::kTrain,
                     SentLenOptions().labels(SentLenLabels::kRecompute));
      },
      {"short.txt", "line 1", "4 words", "outside every length bin"});
}

TEST(SentLen, Errors) {
  TempDir dir;
  const auto read = [&](const std::string& name, const std::string& text) {
    write_text(dir.file(name), text);
    return [&dir, name] { read_sentlen(dir.file(name), Split::kTrain); };
  };
  expect_error<UserError>(read("empty.txt", ""), {"sentlen", "empty.txt", "empty file"});
  expect_error<UserError>(read("fields.txt", "tr\t0\t" + words(5) + "\ntr 0 a b c d e\n"),
                          {"fields.txt", "line 2", "1 tab-separated field(s), expected 3"});
  expect_error<UserError>(read("split.txt", "dev\t0\t" + words(5) + "\n"),
                          {"split.txt", "line 1", "split \"dev\"", "tr, va, te"});
  expect_error<UserError>(read("label.txt", "tr\t6\t" + words(5) + "\n"),
                          {"label.txt", "line 1", "label \"6\"", "0..5"});
  expect_error<UserError>(read("label2.txt", "tr\tx\t" + words(5) + "\n"),
                          {"label2.txt", "label \"x\""});
  // A line of split and label only, tab-ended, has no sentence (not an empty one).
  expect_error<UserError>(read("no_words.txt", "tr\t0\t" + words(5) + "\ntr\t0\t \n"),
                          {"no_words.txt", "line 2", "2 tab-separated field(s), expected 3"});
  // Lone carriage returns (old Mac line endings) would make the file one line.
  expect_error<UserError>(
      read("cr.txt", "tr\t0\t" + words(5) + "\rte\t0\t" + words(5) + "\r"),
      {"cr.txt", "line 1", "carriage return inside it", "lone carriage return"});
  expect_error<UserError>([&] { read_sentlen(dir.file("missing.txt"), Split::kTrain); },
                          {"missing.txt"});
  // A split without rows: nothing to train on, or nothing to evaluate on (0% accuracy).
  write_text(dir.file("no_test.txt"), "tr\t0\t" + words(5) + "\nva\t0\t" + words(5) + "\n");
  expect_error<UserError>([&] { read_sentlen(dir.file("no_test.txt"), Split::kTest); },
                          {"no_test.txt", "no line of the test split (te)"});
  write_text(dir.file("no_train.txt"), "va\t0\t" + words(5) + "\nte\t0\t" + words(5) + "\n");
  expect_error<UserError>([&] { read_sentlen(dir.file("no_train.txt"), Split::kTrain); },
                          {"no_train.txt", "no line of the training split (tr)"});
  EXPECT_EQ(read_sentlen(dir.file("no_train.txt"), Split::kTrain,
                         SentLenOptions().validation_in_train(true))
                .size(),
            1u);
  const auto tokenizer = WordPieceTokenizer::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]"});
  expect_error<UserError>([&] { load_sentlen(dir.file("nowhere"), Split::kTrain, tokenizer, 8); },
                          {"sentlen", "sentence_length.txt", "no such file"});
}

TEST(SentLen, LoadsFromProbingFolder) {
  TempDir dir;
  std::filesystem::create_directories(dir.file("probing"));
  write_text(dir.file("probing/sentence_length.txt"),
             "tr\t0\tThe cat sat on mats .\nte\t0\tA dog ran off home .\n");
  const auto tokenizer = WordPieceTokenizer::from_tokens(
      {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on", "mat", "##s", "."});
  const TextDataset d = load_sentlen(dir.path(), Split::kTrain, tokenizer, 10);
  EXPECT_EQ(d.name, "sentlen");
  EXPECT_EQ(d.num_classes, 6);
  EXPECT_TRUE(d.tokens.equal(torch::tensor({{2, 4, 5, 6, 7, 8, 9, 10, 3, 0}})));
  EXPECT_TRUE(d.lengths.equal(torch::tensor({9})));
  EXPECT_TRUE(d.labels.equal(torch::tensor({0})));
}

}  // namespace
}  // namespace lpdt::data
