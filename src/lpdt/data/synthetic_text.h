#pragma once
// A small learnable, seeded text classification corpus for tests and CPU runs without a real
// corpus: every class has its own topic words, all classes share filler words, and a sentence of
// a class mixes the two. Words are made-up syllable strings ("bakoti"), so the corpus comes with
// its own WordPiece vocabulary in which every word is one token.
#include <cstdint>
#include <string>
#include <vector>

#include "lpdt/data/dataset.h"
#include "lpdt/data/text_dataset.h"
#include "lpdt/data/wordpiece_tokenizer.h"

namespace lpdt::data {

// Chained setters: SyntheticTextOptions().num_classes(4).samples_per_class(500).
struct SyntheticTextOptions {
  SyntheticTextOptions& seed(std::uint64_t v) {
    seed_ = v;
    return *this;
  }
  SyntheticTextOptions& num_classes(int64_t v) {
    num_classes_ = v;
    return *this;
  }
  SyntheticTextOptions& samples_per_class(int64_t v) {
    samples_per_class_ = v;
    return *this;
  }
  // Words that only sentences of one class use.
  SyntheticTextOptions& topic_words_per_class(int64_t v) {
    topic_words_per_class_ = v;
    return *this;
  }
  // Words every class uses.
  SyntheticTextOptions& filler_words(int64_t v) {
    filler_words_ = v;
    return *this;
  }
  // Each word of a sentence is a topic word of its class with this probability, else a filler.
  SyntheticTextOptions& topic_probability(double v) {
    topic_probability_ = v;
    return *this;
  }
  // Sentence length in words, uniform in [min_words, max_words].
  SyntheticTextOptions& min_words(int64_t v) {
    min_words_ = v;
    return *this;
  }
  SyntheticTextOptions& max_words(int64_t v) {
    max_words_ = v;
    return *this;
  }
  SyntheticTextOptions& split(Split v) {
    split_ = v;
    return *this;
  }

  std::uint64_t seed_ = 0;
  int64_t num_classes_ = 4;
  int64_t samples_per_class_ = 250;
  int64_t topic_words_per_class_ = 20;
  int64_t filler_words_ = 100;
  double topic_probability_ = 0.3;
  int64_t min_words_ = 6;
  int64_t max_words_ = 30;
  Split split_ = Split::kTrain;
};

// The vocabulary: [PAD] [UNK] [CLS] [SEP] "." then the filler words, then the topic words of
// class 0, 1, ... A function of the word counts only (not of the seed or split), so train and
// test share it.
std::vector<std::string> synthetic_text_vocabulary(const SyntheticTextOptions& options);

// The raw sentences ("word word ... word.") and labels, in a shuffled order. Deterministic in the
// options: the split's stream is Rng::stream(seed, 1 or 2, kSynthetic). ConfigError for bad
// options.
std::vector<TextSample> make_synthetic_text_samples(const SyntheticTextOptions& options);

// The samples tokenized with `tokenizer` (nullptr: the corpus's own vocabulary).
TextDataset make_synthetic_text(const SyntheticTextOptions& options, int64_t max_length,
                                const WordPieceTokenizer* tokenizer = nullptr);

}  // namespace lpdt::data
