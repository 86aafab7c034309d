// AG News CSV reader and the RFC 4180 parser under it, on files the tests write.
#include "lpdt/data/ag_news_reader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "lpdt/core/error.h"
#include "lpdt/data/csv_parser.h"
#include "test_util.h"

namespace lpdt::data {
namespace {

using testing::expect_error;
using testing::TempDir;

void write_text(const std::string& path, const std::string& text) {
  testing::write_bytes(path, std::vector<std::uint8_t>(text.begin(), text.end()));
}

std::vector<std::vector<std::string>> fields_of(const std::vector<CsvRecord>& records) {
  std::vector<std::vector<std::string>> out;
  for (const auto& r : records) out.push_back(r.fields);
  return out;
}

TEST(CsvParser, QuotedFieldsWithCommasQuotesAndNewlines) {
  const std::string text =
      "\"1\",\"a, b\",\"say \"\"hi\"\"\"\r\n"
      "2,plain,\"two\nlines\"\n"
      "\n"
      "3, \"spaced\",\"\"\n"
      "4,,last";
  const auto records = parse_csv(text, "t.csv");
  EXPECT_EQ(fields_of(records), (std::vector<std::vector<std::string>>{{"1", "a, b", "say \"hi\""},
                                                                       {"2", "plain", "two\nlines"},
                                                                       {"3", "spaced", ""},
                                                                       {"4", "", "last"}}));
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0].line, 1);
  EXPECT_EQ(records[1].line, 2);
  EXPECT_EQ(records[2].line, 5);  // the quoted line break and the blank line count
  EXPECT_EQ(records[3].line, 6);
}

TEST(CsvParser, Errors) {
  expect_error<UserError>([] { parse_csv("\"1\",\"ok\"\n\"2\",\"open\nstill", "t.csv"); },
                          {"t.csv", "line 2", "unterminated quoted field"});
  expect_error<UserError>([] { parse_csv("\"1\"x,\"b\"\n", "t.csv"); },
                          {"t.csv", "line 1", "unexpected character 'x' after a closing quote"});
  expect_error<UserError>([] { parse_csv("a,b\nc,d\"e\n", "t.csv"); },
                          {"t.csv", "line 2", "inside an unquoted field"});
  // Lines ending in a lone carriage return: the byte is shown escaped and the cause named.
  expect_error<UserError>([] { parse_csv("\"1\",\"a\"\r\"2\",\"b\"\r", "t.csv"); },
                          {"t.csv", "line 1", "unexpected character '\\x0D'", "lone carriage return"});
  expect_error<UserError>(
      [] { parse_csv("1,\"a\",b\n2,plain,c\r3,x,y\r", "t.csv"); },
      {"t.csv", "line 2", "carriage return inside an unquoted field", "lone carriage return"});
}

// A UTF-8 byte order mark (spreadsheet programs write one) is not part of the first field.
TEST(CsvParser, SkipsAByteOrderMark) {
  const auto records = parse_csv("\xEF\xBB\xBF\"3\",\"t\",\"d\"\n1,x,y\n", "t.csv");
  EXPECT_EQ(fields_of(records),
            (std::vector<std::vector<std::string>>{{"3", "t", "d"}, {"1", "x", "y"}}));
}

TEST(AgNews, ReadsRowsLabelsAndText) {
  TempDir dir;
  write_text(dir.file("train.csv"),
             "\"3\",\"Wall St. Bears Claw Back\",\"Reuters - Short-sellers, Wall Street's "
             "dwindling\\band of ultra-cynics.\"\n"
             "\"1\",\"Title \"\"quoted\"\"\",\"Line one\\nline two\"\n"
             "\"4\",\"Multi\nline\",\"x, y\"\n");
  const auto rows = read_ag_news_csv(dir.file("train.csv"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].label, 2);
  EXPECT_EQ(rows[0].text,
            "Wall St. Bears Claw Back Reuters - Short-sellers, Wall Street's dwindling band of "
            "ultra-cynics.");
  EXPECT_EQ(rows[1].label, 0);
  EXPECT_EQ(rows[1].text, "Title \"quoted\" Line one nline two");
  EXPECT_EQ(rows[2].label, 3);
  EXPECT_EQ(rows[2].text, "Multi\nline x, y");
  const auto kept = read_ag_news_csv(dir.file("train.csv"), AgNewsBackslash::kKeep);
  EXPECT_EQ(kept[1].text, "Title \"quoted\" Line one\\nline two");
}

TEST(AgNews, LoadsTokenizedDatasetFromArchiveFolder) {
  TempDir dir;
  std::filesystem::create_directories(dir.file("ag_news_csv"));
  write_text(dir.file("ag_news_csv/test.csv"),
             "\"2\",\"Hello\",\"world, hello\"\n\"4\",\"World\",\"\"\n");
  const auto tokenizer =
      WordPieceTokenizer::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world", ","});
  const TextDataset d = load_ag_news(dir.path(), Split::kTest, tokenizer, 6);
  EXPECT_EQ(d.name, "ag-news");
  EXPECT_EQ(d.num_classes, 4);
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"World", "Sports", "Business", "Sci/Tech"}));
  // [CLS] hello world , hello [SEP] (cut from 7 to 6); [CLS] world [SEP] [PAD] [PAD] [PAD].
  EXPECT_TRUE(d.tokens.equal(torch::tensor({{2, 4, 5, 6, 4, 3}, {2, 5, 3, 0, 0, 0}})));
  EXPECT_TRUE(d.lengths.equal(torch::tensor({6, 3})));
  EXPECT_TRUE(d.labels.equal(torch::tensor({1, 3})));
  EXPECT_EQ(d.vocab_size, 7);
  expect_error<UserError>([&] { load_ag_news(dir.path(), Split::kTrain, tokenizer, 6); },
                          {"ag-news", "train.csv", "no such file"});
  // A FIFO of that name is not a missing file, nor is it read (that would block).
  ASSERT_EQ(::mkfifo((dir.path() + "/train.csv").c_str(), 0600), 0);
  expect_error<UserError>([&] { load_ag_news(dir.path(), Split::kTrain, tokenizer, 6); },
                          {"ag-news", "train.csv", "is not a regular file"});
}

TEST(AgNews, Errors) {
  TempDir dir;
  write_text(dir.file("empty.csv"), "");
  expect_error<UserError>([&] { read_ag_news_csv(dir.file("empty.csv")); },
                          {"ag-news", "empty.csv", "empty file"});
  write_text(dir.file("blank.csv"), "\n\n");
  expect_error<UserError>([&] { read_ag_news_csv(dir.file("blank.csv")); },
                          {"blank.csv", "no rows"});
  write_text(dir.file("class.csv"), "\"1\",\"a\",\"b\"\n\"5\",\"a\",\"b\"\n");
  expect_error<UserError>([&] { read_ag_news_csv(dir.file("class.csv")); },
                          {"class.csv", "line 2", "class index \"5\"", "1, 2, 3, 4"});
  write_text(dir.file("zero.csv"), "\"0\",\"a\",\"b\"\n");
  expect_error<UserError>([&] { read_ag_news_csv(dir.file("zero.csv")); },
                          {"zero.csv", "line 1", "class index \"0\""});
  write_text(dir.file("fields.csv"), "\"1\",\"a\",\"b\"\n\"2\",\"only two\"\n");
  expect_error<UserError>([&] { read_ag_news_csv(dir.file("fields.csv")); },
                          {"fields.csv", "line 2", "2 field(s), expected 3"});
  write_text(dir.file("quote.csv"), "\"1\",\"a\",\"b\n");
  expect_error<UserError>([&] { read_ag_news_csv(dir.file("quote.csv")); },
                          {"quote.csv", "line 1", "unterminated"});
  expect_error<UserError>([&] { read_ag_news_csv(dir.file("missing.csv")); }, {"missing.csv"});
}

}  // namespace
}  // namespace lpdt::data
