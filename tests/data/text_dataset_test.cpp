// Tokenized text datasets: the builder against per-row encoding, synthetic-text's determinism
// and learnability, and the text dataset registry.
#include "lpdt/data/text_dataset.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <fstream>

#include "lpdt/core/error.h"
#include "lpdt/data/dataset_registry.h"
#include "lpdt/data/synthetic_text.h"
#include "test_util.h"

namespace lpdt::data {
namespace {

using testing::expect_error;
using testing::TempDir;

WordPieceTokenizer small_tokenizer() {
  return WordPieceTokenizer::from_tokens(
      {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b", "##b", "c", ".", ","});
}

TEST(TextDataset, BuilderMatchesPerRowEncodingOnAnyThreadCount) {
  const auto tokenizer = small_tokenizer();
  std::vector<TextSample> samples;
  for (int i = 0; i < 2500; ++i) {
    std::string text;
    for (int w = 0; w < i % 13; ++w) text += (w % 3 == 0 ? "a " : w % 3 == 1 ? "Bb, " : "zz. ");
    samples.push_back({text, i % 3});
  }
  const std::vector<std::string> names = {"x", "y", "z"};
  const TextDataset one = build_text_dataset("t", samples, tokenizer, 12, names, 1);
  const TextDataset two = build_text_dataset("t", samples, tokenizer, 12, names, 2);
  EXPECT_TRUE(one.tokens.equal(two.tokens));
  EXPECT_TRUE(one.lengths.equal(two.lengths));
  EXPECT_TRUE(one.labels.equal(two.labels));
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto ids = tokenizer.encode_for_classification(samples[i].text, 12);
    const auto row = two.tokens[static_cast<int64_t>(i)];
    for (int64_t j = 0; j < 12; ++j) ASSERT_EQ(row[j].item<int64_t>(), ids[j]) << i << " " << j;
    const int64_t expected_length =
        std::min<int64_t>(static_cast<int64_t>(tokenizer.encode(samples[i].text).size()) + 2, 12);
    ASSERT_EQ(two.lengths[static_cast<int64_t>(i)].item<int64_t>(), expected_length) << i;
    ASSERT_EQ(two.labels[static_cast<int64_t>(i)].item<int64_t>(), samples[i].label);
  }
  const Dataset d = to_dataset(two);
  EXPECT_TRUE(d.is_text());
  EXPECT_EQ(d.size(), 2500);
  EXPECT_EQ(d.sequence_length(), 12);
  EXPECT_EQ(d.vocab_size, 10);
  EXPECT_EQ(d.pad_id, 0);
}

// The share of [UNK] among the word tokens, against a count over the encoded words of each text
// (cut to the row as the builder cuts it): [CLS], [SEP] and padding never count.
TEST(TextDataset, UnknownTokenFractionCountsWordTokensOnly) {
  const auto tokenizer = small_tokenizer();
  std::vector<TextSample> samples;
  for (int i = 0; i < 300; ++i) {
    std::string text;
    for (int w = 0; w < i % 11; ++w) text += (w * 7 + i) % 4 == 0 ? "zz " : "a bb ";
    samples.push_back({text, 0});
  }
  const int64_t length = 9;
  const TextDataset d = build_text_dataset("t", samples, tokenizer, length, {"x"});
  EXPECT_EQ(d.unk_id, tokenizer.unk_id());
  int64_t words = 0, unknown = 0;
  for (const TextSample& sample : samples) {
    const std::vector<int32_t> ids = tokenizer.encode(sample.text);
    const std::size_t kept = std::min<std::size_t>(ids.size(), length - 2);
    for (std::size_t j = 0; j < kept; ++j) {
      ++words;
      unknown += ids[j] == tokenizer.unk_id();
    }
  }
  ASSERT_GT(unknown, 0);
  ASSERT_LT(unknown, words);
  EXPECT_DOUBLE_EQ(unknown_token_fraction(d),
                   static_cast<double>(unknown) / static_cast<double>(words));
  // Only special tokens: every word is [UNK]; rows without words: 0.
  const auto specials = WordPieceTokenizer::from_tokens({"[PAD]", "[UNK]", "[CLS]", "[SEP]"});
  EXPECT_DOUBLE_EQ(unknown_token_fraction(build_text_dataset("t", samples, specials, length, {"x"})),
                   1.0);
  EXPECT_DOUBLE_EQ(unknown_token_fraction(build_text_dataset("t", {{"", 0}}, tokenizer, 4, {"x"})),
                   0.0);
}

TEST(TextDataset, BuilderErrors) {
  const auto tokenizer = small_tokenizer();
  expect_error<UserError>(
      [&] {
        build_text_dataset("t", {{"a", 0}, {"b", 2}}, tokenizer, 8, {"x", "y"});
      },
      {"t: sample 1", "label 2", "[0, 2)"});
  expect_error<ConfigError>([&] { build_text_dataset("t", {}, tokenizer, 1, {"x"}); },
                            {"max_length", "got 1"});
  expect_error<ConfigError>([&] { build_text_dataset("t", {}, tokenizer, 4, {"x"}, 0); },
                            {"threads", "got 0"});
}

TEST(SyntheticText, DeterministicWithSharedVocabulary) {
  const auto options = SyntheticTextOptions().seed(3).samples_per_class(50);
  const auto a = make_synthetic_text_samples(options);
  const auto b = make_synthetic_text_samples(options);
  ASSERT_EQ(a.size(), 200u);
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].text, b[i].text);
    ASSERT_EQ(a[i].label, b[i].label);
  }
  const auto test = make_synthetic_text_samples(SyntheticTextOptions(options).split(Split::kTest));
  EXPECT_NE(test[0].text, a[0].text);
  EXPECT_EQ(synthetic_text_vocabulary(options),
            synthetic_text_vocabulary(SyntheticTextOptions(options).seed(9)));
  // Every word is one token of the corpus's own vocabulary: no [UNK], length = words + 1 (".").
  const auto tokenizer = WordPieceTokenizer::from_tokens(synthetic_text_vocabulary(options));
  for (const auto& s : a) {
    const auto ids = tokenizer.encode(s.text);
    int64_t words = 1;
    for (char c : s.text) words += c == ' ';
    ASSERT_EQ(static_cast<int64_t>(ids.size()), words + 1) << s.text;
    ASSERT_GE(words, 6);
    ASSERT_LE(words, 30);
    for (int32_t id : ids) ASSERT_NE(id, tokenizer.unk_id());
  }
  expect_error<ConfigError>(
      [] { make_synthetic_text_samples(SyntheticTextOptions().num_classes(1)); },
      {"synthetic-text", "num_classes", "got 1"});
  expect_error<ConfigError>(
      [] { make_synthetic_text_samples(SyntheticTextOptions().min_words(5).max_words(4)); },
      {"synthetic-text", "min_words <= max_words"});
}

TEST(SyntheticText, LabelIsLearnableFromTheWords) {
  // Nearest class centroid on bag-of-words counts, fitted on train, scored on test.
  const auto options = SyntheticTextOptions().seed(1).samples_per_class(200);
  const TextDataset train = make_synthetic_text(options, 40);
  const TextDataset test =
      make_synthetic_text(SyntheticTextOptions(options).split(Split::kTest), 40);
  const auto bag = [](const TextDataset& d) {
    auto counts = torch::zeros({d.size(), d.vocab_size}, torch::kFloat);
    counts.scatter_add_(1, d.tokens, torch::ones(d.tokens.sizes(), torch::kFloat));
    counts.narrow(1, 0, 5).zero_();  // specials and "."
    return counts;
  };
  const auto x_train = bag(train);
  auto centroids = torch::zeros({train.num_classes, train.vocab_size}, torch::kFloat);
  centroids.index_add_(0, train.labels, x_train);
  centroids = centroids / centroids.norm(2, 1, true);
  const auto predicted = bag(test).matmul(centroids.t()).argmax(1);
  const double accuracy = predicted.eq(test.labels).to(torch::kDouble).mean().item<double>();
  EXPECT_GT(accuracy, 0.95);
  EXPECT_EQ(train.class_names, (std::vector<std::string>{"topic0", "topic1", "topic2", "topic3"}));
}

TEST(TextRegistry, LoadsByName) {
  EXPECT_EQ(text_dataset_names(),
            (std::vector<std::string>{"ag-news", "sentlen", "synthetic-text"}));
  const TextDataset own = load_text_dataset("synthetic-text", "", "", Split::kTest, 16);
  EXPECT_EQ(own.name, "synthetic-text");
  EXPECT_EQ(own.max_length(), 16);
  EXPECT_EQ(own.vocab_size, 5 + 100 + 4 * 20);
  TempDir dir;
  {
    std::ofstream vocab(dir.file("vocab.txt"));
    for (const auto& t : synthetic_text_vocabulary({})) vocab << t << "\n";
  }
  const TextDataset from_file =
      load_text_dataset("synthetic-text", "", dir.file("vocab.txt"), Split::kTest, 16);
  EXPECT_TRUE(from_file.tokens.equal(own.tokens));
  expect_error<ConfigError>([] { load_text_dataset("imdb", "/x", "/v", Split::kTrain, 8); },
                            {"unknown text dataset \"imdb\"", "ag-news, sentlen, synthetic-text"});
  expect_error<ConfigError>([] { load_text_dataset("ag-news", "", "/v", Split::kTrain, 8); },
                            {"data.dir is empty", "ag-news"});
  expect_error<ConfigError>([] { load_text_dataset("sentlen", "/x", "", Split::kTrain, 8); },
                            {"data.vocab is empty", "sentlen", "vocab.txt"});
  expect_error<UserError>(
      [&] { load_text_dataset("ag-news", dir.path(), dir.file("none.txt"), Split::kTrain, 8); },
      {"none.txt", "cannot open"});
}

}  // namespace
}  // namespace lpdt::data
