#pragma once
// Node-batched training loader: one call gives the next mini-batch of every local node, stacked
// as [k, b, ...] so the k node replicas run as one batched computation (design.md, "nodes are a
// batch dimension").
#include <torch/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "lpdt/data/dataset.h"
#include "lpdt/data/partition.h"
#include "lpdt/data/transforms.h"

namespace lpdt::data {

struct Batch {
  torch::Tensor inputs;   // [k, b, C, H, W] float32, normalised; text: [k, b, L] int64 tokens
  torch::Tensor targets;  // [k, b] int64
};

struct LoaderOptions {
  LoaderOptions& batch_size(int64_t v) {
    batch_size_ = v;
    return *this;
  }
  LoaderOptions& seed(std::uint64_t v) {
    seed_ = v;
    return *this;
  }
  LoaderOptions& augment(const AugmentOptions& v) {
    augment_ = v;
    return *this;
  }
  // The partition's nodes hosted here, in the order of the batch's first dimension; empty: all
  // nodes 0..n-1 (the simulator).
  LoaderOptions& nodes(std::vector<int64_t> v) {
    nodes_ = std::move(v);
    return *this;
  }
  // Make batches on this device (a GPU, or the CPU) instead of on the host: the training set (or
  // its tokens) and labels are copied there once at construction, and next() gathers, augments
  // and normalises each batch there with tensor operations, on the calling thread, so a GPU gets a
  // few kernels per step and no host synchronisation (only the step's sample indices and random
  // draws cross from the host, asynchronously from pinned memory). There is no prefetch thread
  // then: the host's share is picking indices and drawing. The random resized and centre crops
  // (AugmentOptions) are CPU-only: a ConfigError. Unset (the default): made on the host,
  // prefetched. The batches are equal either way (tested).
  LoaderOptions& batches_on(std::optional<torch::Device> v) {
    batches_on_ = v;
    return *this;
  }
  // Prepare batches on a background thread. Results are identical either way.
  LoaderOptions& prefetch(bool v) {
    prefetch_ = v;
    return *this;
  }
  LoaderOptions& prefetch_depth(int64_t v) {
    prefetch_depth_ = v;
    return *this;
  }
  // Called with the step number (0, 1, ...) on the thread that prepares that step's batch, just
  // before preparing it: for instrumentation and fault-injection tests. An exception it throws
  // reaches next() like any failure of the loader.
  LoaderOptions& on_prepare(std::function<void(int64_t)> v) {
    on_prepare_ = std::move(v);
    return *this;
  }

  int64_t batch_size_ = 32;
  std::uint64_t seed_ = 0;
  AugmentOptions augment_;
  std::vector<int64_t> nodes_;
  std::optional<torch::Device> batches_on_;
  bool prefetch_ = true;
  int64_t prefetch_depth_ = 2;
  std::function<void(int64_t)> on_prepare_;
};

// Epoch semantics (docs/data.md): every node walks its own partition in an order reshuffled at
// the start of each of its local passes with Rng::stream(seed, node, kDataOrder); when a pass is
// exhausted mid-batch it continues into the next shuffled pass, so every node always yields b
// samples even when partitions differ in size. Augmentation draws come from
// Rng::stream(seed, node, kAugment). A node's batches therefore depend only on (seed, node, its
// partition, options), not on which other nodes share the loader.
class NodeBatchedLoader {
 public:
  // ConfigError: batch size < 1, a node id outside the partition or repeated, an empty node
  // partition, a partition index outside the dataset, prefetch depth < 1.
  NodeBatchedLoader(const Dataset& train, const Partition& partition, const LoaderOptions& options);
  ~NodeBatchedLoader();
  NodeBatchedLoader(const NodeBatchedLoader&) = delete;
  NodeBatchedLoader& operator=(const NodeBatchedLoader&) = delete;

  // The next step's batch, on the host or on LoaderOptions::batches_on's device. An exception
  // raised while preparing it (also on the prefetch thread) is rethrown here, and again on every
  // later call.
  Batch next();
  // Moves past the next step's batch as next() would (the same orders and draws afterwards)
  // without making it where that costs work: resuming a run.
  void skip();

  // ceil(mean partition size over all n nodes / b): the steps of one nominal epoch, the same on
  // every process of a run.
  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  int64_t batch_size() const { return options_.batch_size_; }
  const std::vector<int64_t>& node_ids() const { return options_.nodes_; }
  int64_t num_local_nodes() const { return static_cast<int64_t>(options_.nodes_.size()); }

 private:
  struct NodeState;
  class Maker;        // the deterministic batch state machine, used by one thread at a time
  struct DeviceData;  // the training set on LoaderOptions::batches_on's device

  struct Slot {
    Batch batch;
    std::exception_ptr error;
  };
  void worker_loop();

  LoaderOptions options_;
  int64_t steps_per_epoch_ = 0;
  std::unique_ptr<Maker> maker_;
  std::unique_ptr<DeviceData> device_data_;

  std::mutex mutex_;
  std::condition_variable ready_cv_;  // a slot was queued
  std::condition_variable space_cv_;  // a slot was taken, or stop
  std::deque<Slot> queue_;
  bool stop_ = false;
  std::exception_ptr error_;  // sticky: once a batch failed, every next() rethrows it
  std::thread worker_;
};

}  // namespace lpdt::data
