#include "lpdt/data/dataset.h"

#include <torch/types.h>

#include "lpdt/core/error.h"

namespace lpdt::data {

const char* split_name(Split split) { return split == Split::kTrain ? "train" : "test"; }

void check_dataset(const Dataset& d) {
  if (d.is_text()) {
    LPDT_CHECK(!d.images.defined() && d.labels.defined(), d.name + ": tokens and images both set");
    LPDT_CHECK(d.tokens.dim() == 2 && d.tokens.scalar_type() == torch::kInt64,
               d.name + ": tokens must be [N, L] int64");
    LPDT_CHECK(d.labels.dim() == 1 && d.labels.scalar_type() == torch::kInt64 &&
                   d.labels.size(0) == d.tokens.size(0),
               d.name + ": labels must be [N] int64, one per sequence");
    LPDT_CHECK(d.num_classes > 0 && d.vocab_size > 0 && d.pad_id >= 0 && d.pad_id < d.vocab_size,
               d.name + ": num_classes, vocab_size and pad_id must be set");
    if (d.size() > 0) {
      LPDT_CHECK(d.tokens.min().item<int64_t>() >= 0 &&
                     d.tokens.max().item<int64_t>() < d.vocab_size,
                 d.name + ": token id outside the vocabulary");
      LPDT_CHECK(
          d.labels.min().item<int64_t>() >= 0 && d.labels.max().item<int64_t>() < d.num_classes,
          d.name + ": label out of range");
    }
    return;
  }
  LPDT_CHECK(d.images.defined() && d.labels.defined(), d.name + ": images/labels not set");
  LPDT_CHECK(d.images.dim() == 4 && d.images.scalar_type() == torch::kUInt8,
             d.name + ": images must be [N, C, H, W] uint8");
  LPDT_CHECK(d.labels.dim() == 1 && d.labels.scalar_type() == torch::kInt64,
             d.name + ": labels must be [N] int64");
  LPDT_CHECK(d.images.size(0) == d.labels.size(0), d.name + ": image and label counts differ");
  LPDT_CHECK(d.num_classes > 0, d.name + ": num_classes must be positive");
  LPDT_CHECK(static_cast<int64_t>(d.mean.size()) == d.channels() &&
                 static_cast<int64_t>(d.std.size()) == d.channels(),
             d.name + ": need one mean and one std per channel");
  for (double s : d.std) LPDT_CHECK(s > 0.0, d.name + ": std must be positive");
  if (d.size() > 0) {
    LPDT_CHECK(
        d.labels.min().item<int64_t>() >= 0 && d.labels.max().item<int64_t>() < d.num_classes,
        d.name + ": label out of range");
  }
}

Dataset first_samples(const Dataset& dataset, int64_t n) {
  if (n <= 0 || n >= dataset.size()) return dataset;
  Dataset out = dataset;
  if (dataset.is_text()) {
    out.tokens = dataset.tokens.narrow(0, 0, n);
  } else {
    out.images = dataset.images.narrow(0, 0, n);
  }
  out.labels = dataset.labels.narrow(0, 0, n);
  return out;
}

torch::Tensor class_counts(const torch::Tensor& labels, int64_t num_classes) {
  LPDT_CHECK(labels.dim() == 1 && labels.scalar_type() == torch::kInt64,
             "class_counts: labels must be [N] int64");
  if (labels.numel() == 0) return torch::zeros({num_classes}, torch::kInt64);
  LPDT_CHECK(labels.min().item<int64_t>() >= 0 && labels.max().item<int64_t>() < num_classes,
             "class_counts: label out of range");
  return torch::bincount(labels, /*weights=*/{}, num_classes).to(torch::kInt64);
}

}  // namespace lpdt::data
