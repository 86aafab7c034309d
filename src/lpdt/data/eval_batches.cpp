#include "lpdt/data/eval_batches.h"

#include <torch/types.h>

#include "lpdt/core/error.h"

namespace lpdt::data {

EvalBatches::EvalBatches(const Dataset& dataset, int64_t batch_size, const AugmentOptions& augment)
    : dataset_(dataset), batch_size_(batch_size) {
  check_dataset(dataset_);
  if (batch_size < 1) {
    throw ConfigError("eval batches: batch size must be >= 1, got " + std::to_string(batch_size));
  }
  if (augment.center_crop < 0) {
    throw ConfigError("eval batches: centre crop size must be >= 0, got " +
                      std::to_string(augment.center_crop));
  }
  center_crop_ = augment.center_crop;
  if (dataset_.is_text()) return;  // token ids as they are
  pad_height_ = augment.pad_height > 0 ? augment.pad_height : dataset_.height();
  pad_width_ = augment.pad_width > 0 ? augment.pad_width : dataset_.width();
  if (pad_height_ < dataset_.height() || pad_width_ < dataset_.width()) {
    throw ConfigError("eval batches: cannot pad " + std::to_string(dataset_.height()) + "x" +
                      std::to_string(dataset_.width()) + " images to " +
                      std::to_string(pad_height_) + "x" + std::to_string(pad_width_));
  }
}

int64_t EvalBatches::num_batches() const {
  return (dataset_.size() + batch_size_ - 1) / batch_size_;
}

EvalBatch EvalBatches::batch(int64_t i) const {
  LPDT_CHECK(i >= 0 && i < num_batches(), "EvalBatches::batch: index out of range");
  const int64_t start = i * batch_size_;
  const int64_t length = std::min(batch_size_, dataset_.size() - start);
  if (dataset_.is_text()) {
    return EvalBatch{dataset_.tokens.narrow(0, start, length), dataset_.labels.narrow(0, start, length)};
  }
  auto images = dataset_.images.narrow(0, start, length);  // [B, C, H, W] uint8
  images = pad_to(images, pad_height_, pad_width_);
  if (center_crop_ > 0) images = eval_center_crop(images, center_crop_);
  return EvalBatch{normalize(images, dataset_.mean, dataset_.std),
                   dataset_.labels.narrow(0, start, length)};
}

}  // namespace lpdt::data
