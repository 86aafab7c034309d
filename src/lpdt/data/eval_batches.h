#pragma once
// Evaluation batches over a whole (test) set, in dataset order, without augmentation.
#include <torch/types.h>

#include <cstdint>
#include <iterator>

#include "lpdt/data/dataset.h"
#include "lpdt/data/transforms.h"

namespace lpdt::data {

struct EvalBatch {
  torch::Tensor inputs;   // [B, C, H, W] float32, normalised; text: [B, L] int64 tokens
  torch::Tensor targets;  // [B] int64
};

// A lazy, random-access sequence of batches: batch i holds samples [i * B, min((i + 1) * B, N)),
// so the last batch may be smaller and every sample is seen exactly once. Only the deterministic
// parts of `augment` apply, pad_to (pad_height / pad_width) and then the evaluation centre crop
// (center_crop), so the training loader's options can be passed as they are; random flips and
// crops are ignored.
//   for (const EvalBatch& batch : EvalBatches(test, 256)) { ... }
class EvalBatches {
 public:
  // ConfigError when batch_size < 1 or the pad target is smaller than the images.
  EvalBatches(const Dataset& dataset, int64_t batch_size, const AugmentOptions& augment = {});

  int64_t num_batches() const;
  int64_t num_samples() const { return dataset_.size(); }
  EvalBatch batch(int64_t i) const;

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = EvalBatch;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = EvalBatch;

    Iterator(const EvalBatches* owner, int64_t i) : owner_(owner), i_(i) {}
    EvalBatch operator*() const { return owner_->batch(i_); }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const Iterator& other) const { return i_ == other.i_; }
    bool operator!=(const Iterator& other) const { return i_ != other.i_; }

   private:
    const EvalBatches* owner_;
    int64_t i_;
  };
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, num_batches()); }

 private:
  Dataset dataset_;
  int64_t batch_size_;
  int64_t pad_height_ = 0;
  int64_t pad_width_ = 0;
  int64_t center_crop_ = 0;
};

}  // namespace lpdt::data
