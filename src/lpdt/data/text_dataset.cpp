#include "lpdt/data/text_dataset.h"

#include <torch/types.h>

#include <algorithm>
#include <exception>
#include <thread>

#include "lpdt/core/error.h"

namespace lpdt::data {

void check_text_dataset(const TextDataset& d) {
  LPDT_CHECK(d.tokens.defined() && d.lengths.defined() && d.labels.defined(),
             d.name + ": tokens, lengths and labels must be set");
  LPDT_CHECK(d.tokens.dim() == 2 && d.tokens.scalar_type() == torch::kInt64,
             d.name + ": tokens must be [N, L] int64");
  const int64_t n = d.tokens.size(0);
  const int64_t max_length = d.tokens.size(1);
  LPDT_CHECK(
      d.lengths.dim() == 1 && d.lengths.scalar_type() == torch::kInt64 && d.lengths.size(0) == n,
      d.name + ": lengths must be [N] int64");
  LPDT_CHECK(
      d.labels.dim() == 1 && d.labels.scalar_type() == torch::kInt64 && d.labels.size(0) == n,
      d.name + ": labels must be [N] int64");
  LPDT_CHECK(d.num_classes > 0 && static_cast<int64_t>(d.class_names.size()) == d.num_classes,
             d.name + ": need num_classes > 0 and one name per class");
  LPDT_CHECK(d.vocab_size > 0 && d.pad_id >= 0 && d.pad_id < d.vocab_size,
             d.name + ": vocab_size and pad_id must be set");
  if (n == 0) return;
  LPDT_CHECK(d.tokens.min().item<int64_t>() >= 0 && d.tokens.max().item<int64_t>() < d.vocab_size,
             d.name + ": token id outside the vocabulary");
  LPDT_CHECK(d.labels.min().item<int64_t>() >= 0 && d.labels.max().item<int64_t>() < d.num_classes,
             d.name + ": label out of range");
  LPDT_CHECK(d.lengths.min().item<int64_t>() >= 2 && d.lengths.max().item<int64_t>() <= max_length,
             d.name + ": lengths must be in [2, max_length]");
  // Padding is exactly the tail: position j is pad_id iff j >= lengths[i] (real tokens are never
  // [PAD], since [PAD] cannot come out of WordPiece for text).
  const auto positions = torch::arange(max_length, torch::kInt64).unsqueeze(0);  // [1, L]
  const auto is_tail = positions.ge(d.lengths.unsqueeze(1));                     // [N, L]
  LPDT_CHECK(d.tokens.eq(d.pad_id).equal(is_tail), d.name + ": padding does not match lengths");
}

TextDataset build_text_dataset(const std::string& name, const std::vector<TextSample>& samples,
                               const WordPieceTokenizer& tokenizer, int64_t max_length,
                               std::vector<std::string> class_names, int threads) {
  if (max_length < 2) {
    throw ConfigError(name + ": max_length must be at least 2 ([CLS] and [SEP]), got " +
                      std::to_string(max_length));
  }
  if (threads < 1) {
    throw ConfigError(name + ": threads must be at least 1, got " + std::to_string(threads));
  }
  const auto num_classes = static_cast<int64_t>(class_names.size());
  const auto n = static_cast<int64_t>(samples.size());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = samples[static_cast<std::size_t>(i)].label;
    if (label < 0 || label >= num_classes) {
      throw UserError(name + ": sample " + std::to_string(i) + " has label " +
                      std::to_string(label) + ", expected [0, " + std::to_string(num_classes) +
                      ")");
    }
  }
  TextDataset d;
  d.name = name;
  d.tokens = torch::empty({n, max_length}, torch::kInt64);
  d.lengths = torch::empty({n}, torch::kInt64);
  d.labels = torch::empty({n}, torch::kInt64);
  auto* tokens = d.tokens.data_ptr<int64_t>();
  auto* lengths = d.lengths.data_ptr<int64_t>();
  auto* labels = d.labels.data_ptr<int64_t>();

  // Rows [begin, end): each thread writes only its own rows, so no locking.
  const auto encode_rows = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const TextSample& sample = samples[static_cast<std::size_t>(i)];
      const std::vector<int32_t> ids = tokenizer.encode(sample.text);
      const int64_t body = std::min<int64_t>(static_cast<int64_t>(ids.size()), max_length - 2);
      int64_t* row = tokens + i * max_length;
      row[0] = tokenizer.cls_id();
      for (int64_t j = 0; j < body; ++j) row[1 + j] = ids[static_cast<std::size_t>(j)];
      row[1 + body] = tokenizer.sep_id();
      std::fill(row + 2 + body, row + max_length, static_cast<int64_t>(tokenizer.pad_id()));
      lengths[i] = body + 2;
      labels[i] = sample.label;
    }
  };
  const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(threads, n / 1000 + 1));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(workers));
  std::vector<std::thread> pool;
  for (int64_t w = 1; w < workers; ++w) {
    pool.emplace_back([&, w] {
      try {
        encode_rows(n * w / workers, n * (w + 1) / workers);
      } catch (...) {
        errors[static_cast<std::size_t>(w)] = std::current_exception();
      }
    });
  }
  try {
    encode_rows(0, n / workers);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& t : pool) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }

  d.num_classes = num_classes;
  d.class_names = std::move(class_names);
  d.pad_id = tokenizer.pad_id();
  d.unk_id = tokenizer.unk_id();
  d.vocab_size = tokenizer.vocab_size();
  check_text_dataset(d);
  return d;
}

double unknown_token_fraction(const TextDataset& dataset) {
  if (dataset.size() == 0) return 0;
  // Word positions: 1 .. lengths - 2 of each row (after [CLS], before [SEP]).
  const torch::Tensor position = torch::arange(dataset.max_length(), torch::kInt64).unsqueeze(0);
  const torch::Tensor word = position.ge(1).logical_and(position.lt(dataset.lengths.unsqueeze(1) - 1));
  const auto words = word.sum().item<int64_t>();
  if (words == 0) return 0;
  const auto unknown = dataset.tokens.eq(dataset.unk_id).logical_and(word).sum().item<int64_t>();
  return static_cast<double>(unknown) / static_cast<double>(words);
}

Dataset to_dataset(const TextDataset& text) {
  Dataset d;
  d.name = text.name;
  d.tokens = text.tokens;
  d.labels = text.labels;
  d.num_classes = text.num_classes;
  d.pad_id = text.pad_id;
  d.vocab_size = text.vocab_size;
  check_dataset(d);
  return d;
}

}  // namespace lpdt::data
