#include "lpdt/data/loader.h"

#include <ATen/Parallel.h>
#include <omp.h>

#include <torch/torch.h>

#include <set>

#include "lpdt/core/error.h"
#include "lpdt/core/rng.h"

namespace lpdt::data {

struct NodeBatchedLoader::NodeState {
  const std::vector<int64_t>* indices = nullptr;  // the node's partition
  std::vector<int64_t> order;                     // the current pass
  std::size_t position = 0;  // next entry of `order`; == order.size() starts a new pass
  int64_t passes = 0;
  Rng order_rng;
  Rng augment_rng;
};

class NodeBatchedLoader::Maker {
 public:
  Maker(const Dataset& train, const Partition& partition, const LoaderOptions& options)
      : dataset_(train), partition_(partition), options_(options) {
    for (int64_t node : options_.nodes_) {
      nodes_.push_back(NodeState{
          &partition_.node_indices[node],
          {},
          0,
          0,
          Rng::stream(options_.seed_, static_cast<std::uint64_t>(node), StreamPurpose::kDataOrder),
          Rng::stream(options_.seed_, static_cast<std::uint64_t>(node), StreamPurpose::kAugment)});
    }
  }

  Batch make() {
    if (options_.on_prepare_) options_.on_prepare_(step_);
    ++step_;
    const auto k = static_cast<int64_t>(nodes_.size());
    const int64_t b = options_.batch_size_;
    auto index = torch::empty({k * b}, torch::kInt64);  // [k * b] int64, node-major
    int64_t* out = index.data_ptr<int64_t>();
    for (auto& node : nodes_) {
      for (int64_t t = 0; t < b; ++t) {
        if (node.position == node.order.size()) new_pass(node);
        *out++ = node.order[node.position++];
      }
    }
    auto targets = dataset_.labels.index_select(0, index).view({k, b});
    if (dataset_.is_text()) {  // token ids, no augmentation: [k, b, L] int64
      return Batch{dataset_.tokens.index_select(0, index).view({k, b, -1}), targets};
    }
    auto images = dataset_.images.index_select(0, index);  // [k * b, C, H, W] uint8
    const AugmentOptions& aug = options_.augment_;
    if (aug.horizontal_flip || aug.crop_padding > 0 || aug.pad_height > 0 || aug.pad_width > 0 ||
        aug.random_resized_crop > 0 || aug.center_crop > 0) {
      // Each node draws from its own stream; the transform itself runs once over all k * b.
      // The resized crop draws its boxes on the images after pad_to.
      const int64_t height = aug.pad_height > 0 ? aug.pad_height : dataset_.height();
      const int64_t width = aug.pad_width > 0 ? aug.pad_width : dataset_.width();
      std::vector<torch::Tensor> boxes, flips, offsets;
      for (auto& node : nodes_) {
        AugmentDraws d = draw_augment(b, aug, node.augment_rng, height, width);
        if (d.resized_crop_boxes.defined()) boxes.push_back(d.resized_crop_boxes);
        if (d.flips.defined()) flips.push_back(d.flips);
        if (d.crop_offsets.defined()) offsets.push_back(d.crop_offsets);
      }
      AugmentDraws all;
      if (!boxes.empty()) all.resized_crop_boxes = torch::cat(boxes);
      if (!flips.empty()) all.flips = torch::cat(flips);
      if (!offsets.empty()) all.crop_offsets = torch::cat(offsets);
      images = apply_augment(images, aug, all);
    }
    auto inputs = normalize(images, dataset_.mean, dataset_.std);  // [k * b, C, H', W'] float32
    return Batch{inputs.view({k, b, inputs.size(1), inputs.size(2), inputs.size(3)}), targets};
  }

 private:
  void new_pass(NodeState& node) {
    node.order = *node.indices;
    lpdt::shuffle(node.order.begin(), node.order.end(), node.order_rng);
    node.position = 0;
    ++node.passes;
  }

  Dataset dataset_;
  Partition partition_;
  LoaderOptions options_;
  std::vector<NodeState> nodes_;
  int64_t step_ = 0;
};

NodeBatchedLoader::NodeBatchedLoader(const Dataset& train, const Partition& partition,
                                     const LoaderOptions& options)
    : options_(options) {
  check_dataset(train);
  const std::string who = "loader";
  if (options_.batch_size_ < 1) {
    throw ConfigError(who + ": batch size must be >= 1, got " +
                      std::to_string(options_.batch_size_));
  }
  if (options_.prefetch_depth_ < 1) {
    throw ConfigError(who + ": prefetch depth must be >= 1, got " +
                      std::to_string(options_.prefetch_depth_));
  }
  if (partition.num_nodes() < 1) throw ConfigError(who + ": the partition has no nodes");
  validate_partition(partition, train.size(), who + ": partition of " + train.name);
  if (options_.nodes_.empty()) {
    for (int64_t k = 0; k < partition.num_nodes(); ++k) options_.nodes_.push_back(k);
  }
  std::set<int64_t> seen;
  for (int64_t node : options_.nodes_) {
    if (node < 0 || node >= partition.num_nodes()) {
      throw ConfigError(who + ": node " + std::to_string(node) + " is not in the partition of " +
                        std::to_string(partition.num_nodes()) + " nodes");
    }
    if (!seen.insert(node).second) {
      throw ConfigError(who + ": node " + std::to_string(node) + " is listed twice");
    }
    if (partition.node_indices[node].empty()) {
      throw ConfigError(who + ": node " + std::to_string(node) + " has no training samples");
    }
  }
  // Fail now, not on the worker thread, if the augmentation cannot apply to these images.
  const AugmentOptions& aug = options_.augment_;
  if (train.is_text()) {  // (the checks below then pass: every size is 0)
    if (aug.horizontal_flip || aug.crop_padding > 0 || aug.pad_height > 0 || aug.pad_width > 0 ||
        aug.random_resized_crop > 0 || aug.center_crop > 0) {
      throw ConfigError(who + ": " + train.name +
                        " is a text dataset: image augmentation does not apply (set "
                        "data.augment = false and data.pad_to = 0)");
    }
  }
  if (aug.crop_padding < 0) {
    throw ConfigError(who + ": crop padding must be >= 0, got " + std::to_string(aug.crop_padding));
  }
  if (aug.random_resized_crop < 0 || aug.center_crop < 0) {
    throw ConfigError(who + ": crop sizes must be >= 0, got random resized crop " +
                      std::to_string(aug.random_resized_crop) + " and centre crop " +
                      std::to_string(aug.center_crop));
  }
  if ((aug.pad_height > 0 && aug.pad_height < train.height()) ||
      (aug.pad_width > 0 && aug.pad_width < train.width())) {
    throw ConfigError(who + ": cannot pad " + std::to_string(train.height()) + "x" +
                      std::to_string(train.width()) + " images to " +
                      std::to_string(aug.pad_height) + "x" + std::to_string(aug.pad_width));
  }
  const int64_t per_step = partition.num_nodes() * options_.batch_size_;
  steps_per_epoch_ = std::max<int64_t>(1, (partition.num_assigned() + per_step - 1) / per_step);

  maker_ = std::make_unique<Maker>(train, partition, options_);
  if (options_.prefetch_) worker_ = std::thread([this] { worker_loop(); });
}

NodeBatchedLoader::~NodeBatchedLoader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  space_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void NodeBatchedLoader::worker_loop() {
  // Torch's grad mode is thread-local: batches need none.
  torch::NoGradGuard no_grad;
  // Batches are made on one thread: the training step's parallel loops use every core, and a
  // second OpenMP team here would make both spin at their barriers for a descheduled thread
  // (measured: an 8-bit training run 1.4x slower). ATen sets a thread's team size from the
  // process-wide setting at its first parallel loop, so that happens first; OpenMP's setting is
  // per thread, so the training thread keeps its own.
  at::internal::lazy_init_num_threads();
  omp_set_num_threads(1);
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      space_cv_.wait(lock, [this] {
        return stop_ || static_cast<int64_t>(queue_.size()) < options_.prefetch_depth_;
      });
      if (stop_) return;
    }
    Slot slot;
    try {
      slot.batch = maker_->make();
    } catch (...) {
      slot.error = std::current_exception();
    }
    const bool failed = static_cast<bool>(slot.error);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(slot));
    }
    ready_cv_.notify_one();
    if (failed) return;  // the maker's state is unknown after a failure: stop producing
  }
}

Batch NodeBatchedLoader::next() {
  if (error_) std::rethrow_exception(error_);
  if (!options_.prefetch_) {
    try {
      return maker_->make();
    } catch (...) {
      error_ = std::current_exception();
      throw;
    }
  }
  Slot slot;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_cv_.wait(lock, [this] { return !queue_.empty(); });
    slot = std::move(queue_.front());
    queue_.pop_front();
  }
  space_cv_.notify_one();
  if (slot.error) {
    error_ = slot.error;
    std::rethrow_exception(error_);
  }
  return std::move(slot.batch);
}

}  // namespace lpdt::data
