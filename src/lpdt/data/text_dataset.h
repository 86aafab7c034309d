#pragma once
// A tokenized text classification dataset (AG News, SentLen, synthetic-text): what the text
// readers produce. to_dataset() turns it into the data module's common Dataset (tokens instead
// of images) for partitions, loaders and the trainer.
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lpdt/data/dataset.h"
#include "lpdt/data/wordpiece_tokenizer.h"

namespace lpdt::data {

struct TextDataset {
  std::string name;
  torch::Tensor tokens;   // [N, L] int64: [CLS] ids [SEP], cut to L, padded with pad_id
  torch::Tensor lengths;  // [N] int64: real tokens per row, [CLS] and [SEP] included (<= L)
  torch::Tensor labels;   // [N] int64, values in [0, num_classes)
  int64_t num_classes = 0;
  std::vector<std::string> class_names;  // num_classes entries
  int64_t pad_id = 0;
  int64_t unk_id = -1;  // the tokenizer's [UNK]: a word the vocabulary cannot spell
  int64_t vocab_size = 0;

  int64_t size() const { return tokens.defined() ? tokens.size(0) : 0; }
  int64_t max_length() const { return tokens.size(1); }
};

// One raw example: UTF-8 text and its class.
struct TextSample {
  std::string text;
  int64_t label = 0;
};

// Checks the invariants above: shapes and dtypes, ids in [0, vocab_size), labels in range, one
// name per class, lengths in [2, L] with pad_id exactly after position lengths[i]. A failure is a
// bug in a reader: LPDT_CHECK.
void check_text_dataset(const TextDataset& dataset);

// Tokenizes `samples` with tokenizer.encode_for_classification(text, max_length), on `threads`
// threads (rows split into contiguous blocks; the result does not depend on the count).
// ConfigError for max_length < 2 or threads < 1; labels must be in [0, class_names.size())
// (UserError naming the sample otherwise).
TextDataset build_text_dataset(const std::string& name, const std::vector<TextSample>& samples,
                               const WordPieceTokenizer& tokenizer, int64_t max_length,
                               std::vector<std::string> class_names, int threads = 2);

// The share of the rows' word tokens ([CLS], [SEP] and padding left out) that are [UNK], in
// [0, 1]; 0 for a dataset without word tokens. A vocabulary that is not the text's tokenizer
// (another language, a vocab.txt of special tokens only) turns most words into [UNK], and the
// model then learns from their lengths alone.
double unknown_token_fraction(const TextDataset& dataset);

// The common Dataset (tokens, labels, num_classes, pad_id, vocab_size), sharing the tensors.
Dataset to_dataset(const TextDataset& text);

}  // namespace lpdt::data
