#pragma once
// SentEval's SentLen probing task (Conneau et al. 2018, "What you can cram into a single vector"):
// data/probing/sentence_length.txt, one example per line, tab-separated:
//   split<TAB>label<TAB>sentence
// split is tr (100k), va (10k) or te (10k); label is the length bin 0..5 of the sentence's word
// count (the sentence is Moses-tokenized, words separated by spaces). SentEval's own loader takes
// the first field as the split, the second as the label and the last as the sentence.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lpdt/data/dataset.h"
#include "lpdt/data/text_dataset.h"
#include "lpdt/data/wordpiece_tokenizer.h"

namespace lpdt::data {

inline constexpr int64_t kSentLenClasses = 6;

// The bin of a sentence of `word_count` words, as SentEval's data README defines them:
//   0: 5-8, 1: 9-12, 2: 13-16, 3: 17-20, 4: 21-25, 5: 26-28
// (Adi et al. 2017's bins without the longer ones, which SentEval's corpus filtered out).
// -1 for a count outside 5..28.
int64_t sentlen_bin(int64_t word_count);

// "5-8", "9-12", "13-16", "17-20", "21-25", "26-28".
const std::vector<std::string>& sentlen_class_names();

// Words of a sentence as SentEval counts them: maximal runs of non-whitespace (Python's split()).
int64_t count_words(std::string_view sentence);

// Where the labels come from.
enum class SentLenLabels {
  kFile,       // the file's label column, checked to be 0..5
  kVerify,     // the file's label, and it must equal sentlen_bin(count_words(sentence))
  kRecompute,  // sentlen_bin(count_words(sentence)); the label column is only checked for 0..5
};

struct SentLenOptions {
  SentLenOptions& labels(SentLenLabels v) {
    labels_ = v;
    return *this;
  }
  // The va rows join the training split (they are skipped by default: lpdt evaluates on te).
  SentLenOptions& validation_in_train(bool v) {
    validation_in_train_ = v;
    return *this;
  }

  SentLenLabels labels_ = SentLenLabels::kFile;
  bool validation_in_train_ = false;
};

// The rows of `path` for `split` (tr -> kTrain, te -> kTest). UserError
// "sentlen: <path>: line N: ..." for a missing or empty file, a line with fewer than 3
// tab-separated fields, a split other than tr / va / te, a label other than 0..5, and (kVerify,
// kRecompute) a sentence whose word count has no bin or (kVerify) whose bin differs from the label.
std::vector<TextSample> read_sentlen(const std::string& path, Split split,
                                     const SentLenOptions& options = {});

// sentence_length.txt from `dir` or its "probing" sub-folder, tokenized.
TextDataset load_sentlen(const std::string& dir, Split split, const WordPieceTokenizer& tokenizer,
                         int64_t max_length, const SentLenOptions& options = {});

}  // namespace lpdt::data
