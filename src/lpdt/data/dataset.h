#pragma once
// An in-memory image classification dataset: the common currency of the data module.
// Images stay uint8 in memory (4x smaller than float32); transforms.h turns a batch into
// normalised float32 on the way to a model.
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lpdt::data {

// Which half of a dataset a reader loads.
enum class Split { kTrain, kTest };

// "train" / "test".
const char* split_name(Split split);

// An image set (images defined) or a text set (tokens defined, images undefined): labels,
// partitions and loaders are the same for both; a text batch carries token ids instead of pixels.
struct Dataset {
  std::string name;
  torch::Tensor images;  // [N, C, H, W] uint8, contiguous
  // Text sets: [N, L] int64 token ids, [CLS] first, padded with pad_id (data/text_dataset.h).
  torch::Tensor tokens;
  int64_t pad_id = 0;
  int64_t vocab_size = 0;
  torch::Tensor labels;  // [N] int64, values in [0, num_classes)
  int64_t num_classes = 0;
  // Per-channel normalisation in [0, 1] pixel units: x_norm = (x / 255 - mean[c]) / std[c].
  std::vector<double> mean;
  std::vector<double> std;
  // What the reader noticed that does not stop it (e.g. images with stray bytes before a JPEG
  // marker): a run says each as a warning and records it with its warnings.
  std::vector<std::string> warnings;

  bool is_text() const { return tokens.defined(); }
  int64_t size() const {
    return images.defined() ? images.size(0) : tokens.defined() ? tokens.size(0) : 0;
  }
  int64_t sequence_length() const { return tokens.size(1); }
  int64_t channels() const { return images.size(1); }
  int64_t height() const { return images.size(2); }
  int64_t width() const { return images.size(3); }
};

// Checks the invariants above (shapes, dtypes, label range, one mean/std per channel, std > 0).
// A failure is a bug in a reader or in the caller that built the struct: LPDT_CHECK.
void check_dataset(const Dataset& dataset);

// The first n samples (all when n <= 0 or n >= size()), as a view: e.g. a test subset.
Dataset first_samples(const Dataset& dataset, int64_t n);

// Number of samples of each class: [num_classes] int64. Labels must be in range.
// labels: [N] int64
torch::Tensor class_counts(const torch::Tensor& labels, int64_t num_classes);

}  // namespace lpdt::data
