#include "lpdt/data/synthetic_text.h"

#include "lpdt/core/error.h"
#include "lpdt/core/rng.h"

namespace lpdt::data {
namespace {

// Word i: its base-16 digits (least significant first) spelled as syllables, at least two, so
// every word is distinct, lower-case ASCII and free of punctuation.
std::string make_word(int64_t i) {
  static const char* const kSyllables[16] = {"ba", "ko", "ri", "tu", "me", "sa", "lo", "ni",
                                             "pe", "du", "ga", "fi", "zo", "he", "wa", "ju"};
  std::string word;
  int64_t v = i;
  int digits = 0;
  do {
    word += kSyllables[v % 16];
    v /= 16;
    ++digits;
  } while (v > 0 || digits < 2);
  return word;
}

constexpr int64_t kSpecialTokens = 5;  // [PAD] [UNK] [CLS] [SEP] "."

void check_options(const SyntheticTextOptions& o) {
  const auto need = [](bool ok, const std::string& message) {
    if (!ok) throw ConfigError("synthetic-text: " + message);
  };
  need(o.num_classes_ >= 2,
       "num_classes must be at least 2, got " + std::to_string(o.num_classes_));
  need(o.samples_per_class_ >= 1,
       "samples_per_class must be at least 1, got " + std::to_string(o.samples_per_class_));
  need(o.topic_words_per_class_ >= 1,
       "topic_words_per_class must be at least 1, got " + std::to_string(o.topic_words_per_class_));
  need(o.filler_words_ >= 1,
       "filler_words must be at least 1, got " + std::to_string(o.filler_words_));
  need(o.topic_probability_ > 0.0 && o.topic_probability_ <= 1.0,
       "topic_probability must be in (0, 1], got " + std::to_string(o.topic_probability_));
  need(o.min_words_ >= 1 && o.max_words_ >= o.min_words_,
       "need 1 <= min_words <= max_words, got " + std::to_string(o.min_words_) + " and " +
           std::to_string(o.max_words_));
}

}  // namespace

std::vector<std::string> synthetic_text_vocabulary(const SyntheticTextOptions& options) {
  check_options(options);
  std::vector<std::string> vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "."};
  const int64_t words =
      options.filler_words_ + options.num_classes_ * options.topic_words_per_class_;
  for (int64_t i = 0; i < words; ++i) vocab.push_back(make_word(i));
  LPDT_CHECK(static_cast<int64_t>(vocab.size()) == kSpecialTokens + words, "vocabulary size");
  return vocab;
}

std::vector<TextSample> make_synthetic_text_samples(const SyntheticTextOptions& o) {
  check_options(o);
  Rng rng = Rng::stream(o.seed_, o.split_ == Split::kTrain ? 1 : 2, StreamPurpose::kSynthetic);
  std::vector<TextSample> samples;
  samples.reserve(static_cast<std::size_t>(o.num_classes_ * o.samples_per_class_));
  const auto span = static_cast<std::uint64_t>(o.max_words_ - o.min_words_ + 1);
  for (int64_t c = 0; c < o.num_classes_; ++c) {
    for (int64_t s = 0; s < o.samples_per_class_; ++s) {
      const int64_t length = o.min_words_ + static_cast<int64_t>(rng.below(span));
      std::string text;
      for (int64_t w = 0; w < length; ++w) {
        // Words: fillers 0..F-1, then class c's topic words F + c*T .. F + (c+1)*T - 1.
        int64_t word;
        if (rng.uniform() < o.topic_probability_) {
          word =
              o.filler_words_ + c * o.topic_words_per_class_ +
              static_cast<int64_t>(rng.below(static_cast<std::uint64_t>(o.topic_words_per_class_)));
        } else {
          word = static_cast<int64_t>(rng.below(static_cast<std::uint64_t>(o.filler_words_)));
        }
        if (w > 0) text += ' ';
        text += make_word(word);
      }
      text += '.';
      samples.push_back(TextSample{std::move(text), c});
    }
  }
  shuffle(samples.begin(), samples.end(), rng);
  return samples;
}

TextDataset make_synthetic_text(const SyntheticTextOptions& options, int64_t max_length,
                                const WordPieceTokenizer* tokenizer) {
  std::vector<std::string> class_names;
  for (int64_t c = 0; c < options.num_classes_; ++c)
    class_names.push_back("topic" + std::to_string(c));
  const std::vector<TextSample> samples = make_synthetic_text_samples(options);
  if (tokenizer != nullptr) {
    return build_text_dataset("synthetic-text", samples, *tokenizer, max_length, class_names);
  }
  const WordPieceTokenizer own =
      WordPieceTokenizer::from_tokens(synthetic_text_vocabulary(options), "synthetic-text");
  return build_text_dataset("synthetic-text", samples, own, max_length, class_names);
}

}  // namespace lpdt::data
