#include "lpdt/data/loader.h"

#include <ATen/Parallel.h>
#include <omp.h>
#include <torch/types.h>
#include <torch/utils.h>

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

namespace {

// Whether any image transform of `aug` applies (pad_to and the centre crop included).
bool any_transform(const AugmentOptions& aug) {
  return aug.horizontal_flip || aug.crop_padding > 0 || aug.pad_height > 0 || aug.pad_width > 0 ||
         aug.random_resized_crop > 0 || aug.center_crop > 0;
}

// One step's choices, made on the host: which samples, and their augmentation draws.
struct Plan {
  torch::Tensor index;  // [k * b] int64, node-major
  AugmentDraws draws;   // over all k * b samples; members undefined where a transform is off
};

}  // namespace

struct NodeBatchedLoader::DeviceData {
  torch::Device device;
  torch::Tensor images;    // [N, C, H, W] uint8 (image sets)
  torch::Tensor tokens;    // [N, L] int64 (text sets)
  torch::Tensor labels;    // [N] int64
  NormalizeMap normalize;  // image sets

  DeviceData(const Dataset& set, torch::Device on) : device(on), labels(set.labels.to(on)) {
    if (set.is_text()) {
      tokens = set.tokens.to(on);
    } else {
      images = set.images.to(on);
      normalize = make_normalize_map(set.mean, set.std, on);
    }
  }

  // A host tensor on the device. To a GPU from pinned memory without waiting: the caching host
  // allocator keeps the pinned block until the copy has run.
  torch::Tensor upload(const torch::Tensor& host) const {
    if (!host.defined() || device.is_cpu()) return host;
    return host.pin_memory().to(device, /*non_blocking=*/true);
  }
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

  // The next step's samples and draws; advances every node's order and augmentation stream.
  Plan plan() {
    if (options_.on_prepare_) options_.on_prepare_(step_);
    ++step_;
    const int64_t b = options_.batch_size_;
    Plan plan;
    plan.index = torch::empty({num_nodes() * b}, torch::kInt64);
    int64_t* out = plan.index.data_ptr<int64_t>();
    for (auto& node : nodes_) {
      for (int64_t t = 0; t < b; ++t) {
        if (node.position == node.order.size()) new_pass(node);
        *out++ = node.order[node.position++];
      }
    }
    const AugmentOptions& aug = options_.augment_;
    if (dataset_.is_text() || !any_transform(aug)) return plan;
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
    if (!boxes.empty()) plan.draws.resized_crop_boxes = torch::cat(boxes);
    if (!flips.empty()) plan.draws.flips = torch::cat(flips);
    if (!offsets.empty()) plan.draws.crop_offsets = torch::cat(offsets);
    return plan;
  }

  // The next step's batch, made on the host.
  Batch make() {
    const Plan p = plan();
    return make_from(p, dataset_.images, dataset_.tokens, dataset_.labels,
                     [&](const torch::Tensor& images) {
                       return normalize(images, dataset_.mean, dataset_.std);
                     });
  }

  // The next step's batch, made on `data`'s device from the host's plan.
  Batch make_on(const DeviceData& data) {
    const Plan p = plan();
    const Plan on_device{data.upload(p.index), AugmentDraws{data.upload(p.draws.resized_crop_boxes),
                                                            data.upload(p.draws.flips),
                                                            data.upload(p.draws.crop_offsets)}};
    return make_from(
        on_device, data.images, data.tokens, data.labels,
        [&](const torch::Tensor& images) { return normalize(images, data.normalize); });
  }

 private:
  int64_t num_nodes() const { return static_cast<int64_t>(nodes_.size()); }

  // Gathers a plan's samples from images / tokens and labels (all on one device, the plan's
  // index and draws too), augments and normalises them.
  template <typename Normalize>
  Batch make_from(const Plan& plan, const torch::Tensor& images, const torch::Tensor& tokens,
                  const torch::Tensor& labels, const Normalize& normalise) const {
    const int64_t k = num_nodes(), b = options_.batch_size_;
    auto targets = labels.index_select(0, plan.index).view({k, b});
    if (dataset_.is_text()) {  // token ids, no augmentation: [k, b, L] int64
      return Batch{tokens.index_select(0, plan.index).view({k, b, -1}), targets};
    }
    auto batch = images.index_select(0, plan.index);  // [k * b, C, H, W] uint8
    if (any_transform(options_.augment_)) {
      batch = apply_augment(batch, options_.augment_, plan.draws);
    }
    auto inputs = normalise(batch);  // [k * b, C, H', W'] float32
    return Batch{inputs.view({k, b, inputs.size(1), inputs.size(2), inputs.size(3)}), targets};
  }

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
    if (any_transform(aug)) {
      throw ConfigError(who + ": " + train.name +
                        " is a text dataset: image augmentation does not apply (set "
                        "data.augment = false and data.pad_to = 0)");
    }
  }
  if (aug.crop_padding < 0) {
    throw ConfigError(who + ": crop padding must be >= 0, got " + std::to_string(aug.crop_padding));
  }
  // A padding beyond the images' side (after data.pad_to) makes most crops blank, and a huge one
  // overflows the padded tensor's size: no sensible run asks for it.
  const int64_t side =
      aug.crop_padding > 0 ? std::min(aug.pad_height > 0 ? aug.pad_height : train.height(),
                                      aug.pad_width > 0 ? aug.pad_width : train.width())
                           : 0;
  if (aug.crop_padding > side) {
    throw ConfigError(who + ": crop padding " + std::to_string(aug.crop_padding) +
                      " exceeds the images' side " + std::to_string(side) +
                      ", so that most crops would hold only padding: expected 0 to " +
                      std::to_string(side) + " (data.crop_padding)");
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
                      std::to_string(aug.pad_height) + "x" + std::to_string(aug.pad_width) +
                      " (data.pad_to: expected at least the images' side, or 0 for no padding)");
  }
  const int64_t per_step = partition.num_nodes() * options_.batch_size_;
  steps_per_epoch_ = std::max<int64_t>(1, (partition.num_assigned() + per_step - 1) / per_step);

  if (options_.batches_on_ && (aug.random_resized_crop > 0 || aug.center_crop > 0)) {
    throw ConfigError(who +
                      ": the random resized crop and the centre crop (data.crop_size, "
                      "imagenette) run on the CPU only, so these batches cannot be made on " +
                      options_.batches_on_->str() +
                      ": make them on the host (data.on_device = "
                      "\"off\")");
  }

  maker_ = std::make_unique<Maker>(train, partition, options_);
  if (options_.batches_on_) {
    device_data_ = std::make_unique<DeviceData>(train, *options_.batches_on_);
  } else if (options_.prefetch_) {
    worker_ = std::thread([this] { worker_loop(); });
  }
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
  if (device_data_ || !options_.prefetch_) {
    try {
      return device_data_ ? maker_->make_on(*device_data_) : maker_->make();
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

void NodeBatchedLoader::skip() {
  if (error_) std::rethrow_exception(error_);
  if (worker_.joinable()) {  // the worker is already making it
    next();
    return;
  }
  try {
    maker_->plan();
  } catch (...) {
    error_ = std::current_exception();
    throw;
  }
}

}  // namespace lpdt::data
