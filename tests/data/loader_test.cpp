// Node-batched loader and evaluation batches.
#include "lpdt/data/loader.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/types.h>

#include <set>

#include "lpdt/core/error.h"
#include "lpdt/data/eval_batches.h"
#include "lpdt/data/iid_partition.h"
#include "lpdt/data/skew_partition.h"
#include "lpdt/data/synthetic.h"
#include "test_util.h"

namespace lpdt::data {
namespace {

// Each image is filled with its own index (mod 256 in channel 0, index / 256 in channel 1), so a
// batch can be traced back to the samples it came from even after normalisation.
Dataset indexed_dataset(int64_t n, int64_t side = 6) {
  Dataset d;
  d.name = "indexed";
  auto idx = torch::arange(n, torch::kInt64);
  auto lo = (idx % 256).to(torch::kUInt8).view({n, 1, 1, 1}).expand({n, 1, side, side});
  auto hi = (idx / 256).to(torch::kUInt8).view({n, 1, 1, 1}).expand({n, 1, side, side});
  d.images = torch::cat({lo, hi}, 1).contiguous();
  d.labels = idx % 10;
  d.num_classes = 10;
  d.mean = {0.0, 0.0};
  d.std = {1.0 / 255.0, 1.0 / 255.0};  // normalised value = the raw byte
  return d;
}

// Recovers the sample index of every image of a batch without augmentation: [k, b] int64.
torch::Tensor sample_ids(const Batch& batch) {
  const auto centre = batch.inputs.select(3, 0).select(3, 0);  // [k, b, C]
  return (centre.select(2, 0) + 256 * centre.select(2, 1)).round().to(torch::kInt64);
}

// Flips and padded crops after zero padding to height x width.
AugmentOptions pad_flip_and_crop(int64_t padding, int64_t height, int64_t width) {
  AugmentOptions aug;
  aug.crop_padding = padding;
  aug.horizontal_flip = true;
  aug.pad_height = height;
  aug.pad_width = width;
  return aug;
}

Partition unequal_partition() {
  Partition p;
  p.node_indices = {{0, 1, 2, 3, 4}, {10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, {30, 31, 32}};
  return p;
}

TEST(Loader, ShapesAndTargets) {
  const Dataset d = indexed_dataset(40);
  NodeBatchedLoader loader(d, unequal_partition(), LoaderOptions().batch_size(4).seed(1));
  EXPECT_EQ(loader.num_local_nodes(), 3);
  EXPECT_EQ(loader.steps_per_epoch(), 2);  // ceil(19 / 3 / 4)
  const Batch b = loader.next();
  EXPECT_EQ(b.inputs.sizes(), (std::vector<int64_t>{3, 4, 2, 6, 6}));
  EXPECT_EQ(b.inputs.scalar_type(), torch::kFloat32);
  EXPECT_EQ(b.targets.sizes(), (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(torch::equal(b.targets, sample_ids(b) % 10));
}

TEST(Loader, EachNodeSeesOnlyItsPartitionAndWholePasses) {
  const Dataset d = indexed_dataset(40);
  const Partition p = unequal_partition();
  NodeBatchedLoader loader(d, p, LoaderOptions().batch_size(3).seed(2).prefetch(false));
  std::vector<std::vector<int64_t>> seen(3);
  for (int step = 0; step < 11; ++step) {  // 33 samples per node
    const auto ids = sample_ids(loader.next());
    for (int64_t k = 0; k < 3; ++k) {
      for (int64_t t = 0; t < 3; ++t) seen[k].push_back(ids[k][t].item<int64_t>());
    }
  }
  for (int64_t k = 0; k < 3; ++k) {
    const std::set<int64_t> own(p.node_indices[k].begin(), p.node_indices[k].end());
    const auto size = static_cast<int64_t>(own.size());
    for (int64_t id : seen[k]) EXPECT_TRUE(own.count(id)) << "node " << k << " got " << id;
    // Every complete pass is a permutation of the node's partition.
    for (int64_t pass = 0; (pass + 1) * size <= 33; ++pass) {
      const std::set<int64_t> in_pass(seen[k].begin() + pass * size,
                                      seen[k].begin() + (pass + 1) * size);
      EXPECT_EQ(in_pass, own) << "node " << k << " pass " << pass;
    }
  }
  // Passes are reshuffled: node 1's first two passes are not in the same order.
  EXPECT_NE(std::vector<int64_t>(seen[1].begin(), seen[1].begin() + 11),
            std::vector<int64_t>(seen[1].begin() + 11, seen[1].begin() + 22));
}

TEST(Loader, DeterministicAndPrefetchEqual) {
  const Dataset d =
      make_synthetic(SyntheticOptions().num_classes(5).samples_per_class(40).height(8).width(8));
  const Partition p = partition_skew(d.labels, 4, 0.5, 7);
  auto options = LoaderOptions().batch_size(8).seed(11).augment(pad_flip_and_crop(2, 10, 12));
  NodeBatchedLoader with(d, p, LoaderOptions(options).prefetch(true));
  NodeBatchedLoader without(d, p, LoaderOptions(options).prefetch(false));
  NodeBatchedLoader deep(d, p, LoaderOptions(options).prefetch(true).prefetch_depth(5));
  for (int step = 0; step < 20; ++step) {
    const Batch a = with.next(), b = without.next(), c = deep.next();
    ASSERT_EQ(a.inputs.sizes(), (std::vector<int64_t>{4, 8, 3, 10, 12}));
    ASSERT_TRUE(torch::equal(a.inputs, b.inputs)) << "step " << step;
    ASSERT_TRUE(torch::equal(a.targets, b.targets)) << "step " << step;
    ASSERT_TRUE(torch::equal(a.inputs, c.inputs)) << "step " << step;
  }
  NodeBatchedLoader other_seed(d, p, LoaderOptions(options).seed(12));
  NodeBatchedLoader same_seed(d, p, options);
  EXPECT_FALSE(torch::equal(other_seed.next().inputs, same_seed.next().inputs));
}

// A text set whose token rows hold their sample index (every token = index + 1).
Dataset indexed_text_dataset(int64_t n, int64_t length = 5) {
  Dataset d;
  d.name = "indexed-text";
  d.tokens = (torch::arange(n, torch::kInt64) + 1).view({n, 1}).expand({n, length}).contiguous();
  d.vocab_size = n + 1;
  d.labels = torch::arange(n, torch::kInt64) % 4;
  d.num_classes = 4;
  return d;
}

// The loaders' batches, step by step: equal values and shapes, `device`'s batches on `device`.
void expect_same_batches(NodeBatchedLoader& host, NodeBatchedLoader& on_device,
                         torch::Device device, int steps) {
  for (int step = 0; step < steps; ++step) {
    const Batch a = host.next(), b = on_device.next();
    // `cuda` names the current GPU; the batches' tensors name it with its index (cuda:0).
    ASSERT_EQ(b.inputs.device().type(), device.type());
    ASSERT_EQ(b.targets.device().type(), device.type());
    if (device.has_index()) {
      ASSERT_EQ(b.inputs.device(), device);
      ASSERT_EQ(b.targets.device(), device);
    }
    ASSERT_TRUE(a.inputs.is_cpu());
    ASSERT_TRUE(torch::equal(a.inputs, b.inputs.cpu())) << "step " << step;
    ASSERT_TRUE(torch::equal(a.targets, b.targets.cpu())) << "step " << step;
  }
}

// Batches made on a device (padded crops by gathers, flips by a select, the normalisation's
// map on the device) equal the host's, step for step, across the nodes' pass boundaries.
void expect_device_batches_equal_host_batches(torch::Device device) {
  const Dataset d =
      make_synthetic(SyntheticOptions().num_classes(5).samples_per_class(30).height(7).width(9));
  const Partition p = partition_skew(d.labels, 3, 0.5, 5);
  const auto options =
      LoaderOptions().batch_size(16).seed(21).augment(pad_flip_and_crop(3, 10, 11));
  NodeBatchedLoader host(d, p, options);
  NodeBatchedLoader on_device(d, p, LoaderOptions(options).batches_on(device));
  expect_same_batches(host, on_device, device, 25);  // 25 * 16 > 150 / 3: several passes

  AugmentOptions none;
  NodeBatchedLoader plain_host(d, p, LoaderOptions(options).augment(none));
  NodeBatchedLoader plain_device(d, p, LoaderOptions(options).augment(none).batches_on(device));
  expect_same_batches(plain_host, plain_device, device, 3);

  const Dataset text = indexed_text_dataset(60);
  const Partition text_partition = partition_iid(60, 4, 2);
  NodeBatchedLoader text_host(text, text_partition, LoaderOptions().batch_size(7).seed(3));
  NodeBatchedLoader text_device(text, text_partition,
                                LoaderOptions().batch_size(7).seed(3).batches_on(device));
  expect_same_batches(text_host, text_device, device, 6);
}

TEST(Loader, BatchesMadeOnTheCpuDeviceEqualHostBatches) {
  expect_device_batches_equal_host_batches(torch::kCPU);
}

TEST(Loader, BatchesMadeOnAGpuEqualHostBatches) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  expect_device_batches_equal_host_batches(torch::kCUDA);
}

TEST(Loader, SkipMovesOnAsNextDoes) {
  const Dataset d =
      make_synthetic(SyntheticOptions().num_classes(4).samples_per_class(10).height(6).width(6));
  const Partition p = partition_iid(40, 2, 9);
  AugmentOptions aug;
  aug.crop_padding = 1;
  aug.horizontal_flip = true;
  const auto options = LoaderOptions().batch_size(6).seed(8).augment(aug);
  for (const auto& variant : {LoaderOptions(options), LoaderOptions(options).prefetch(false),
                              LoaderOptions(options).batches_on(torch::kCPU)}) {
    NodeBatchedLoader reference(d, p, options);
    NodeBatchedLoader skipping(d, p, variant);
    for (int step = 0; step < 9; ++step) reference.next();
    for (int step = 0; step < 9; ++step) skipping.skip();  // past a pass boundary (20 per node)
    const Batch a = reference.next(), b = skipping.next();
    EXPECT_TRUE(torch::equal(a.inputs, b.inputs));
    EXPECT_TRUE(torch::equal(a.targets, b.targets));
  }
}

TEST(Loader, ResizedCropsAreNotMadeOnADevice) {
  const Dataset d = indexed_dataset(40, 12);
  AugmentOptions resized;
  resized.random_resized_crop = 8;
  testing::expect_error<ConfigError>(
      [&] {
        NodeBatchedLoader(d, unequal_partition(),
                          LoaderOptions().augment(resized).batches_on(torch::kCPU));
      },
      {"CPU only", "on the host", "data.on_device"});
}

TEST(Loader, NodeBatchesDoNotDependOnTheOtherLocalNodes) {
  // Under MPI a rank hosts a subset of nodes: node 2's data must be the same as in the simulator.
  const Dataset d = indexed_dataset(200);
  const Partition p = partition_iid(200, 4, 3);
  AugmentOptions aug;
  aug.horizontal_flip = true;
  aug.crop_padding = 1;
  NodeBatchedLoader all(d, p, LoaderOptions().batch_size(5).seed(4).augment(aug));
  NodeBatchedLoader only2(d, p, LoaderOptions().batch_size(5).seed(4).augment(aug).nodes({2}));
  for (int step = 0; step < 12; ++step) {
    const Batch a = all.next(), b = only2.next();
    ASSERT_TRUE(torch::equal(a.inputs[2], b.inputs[0]));
    ASSERT_TRUE(torch::equal(a.targets[2], b.targets[0]));
  }
}

TEST(Loader, WorkerErrorsReachNext) {
  const Dataset d = indexed_dataset(40);
  for (bool prefetch : {true, false}) {
    auto options = LoaderOptions().batch_size(2).prefetch(prefetch).on_prepare([](int64_t step) {
      if (step == 3) throw UserError("injected failure at step 3");
    });
    NodeBatchedLoader loader(d, unequal_partition(), options);
    for (int step = 0; step < 3; ++step) EXPECT_NO_THROW(loader.next());
    testing::expect_error<UserError>([&] { loader.next(); }, {"injected failure at step 3"});
    testing::expect_error<UserError>([&] { loader.next(); }, {"injected failure"});  // sticky
  }
}

TEST(Loader, DestructorDoesNotHangWithAFullQueue) {
  const Dataset d = indexed_dataset(40);
  for (int i = 0; i < 20; ++i) {
    NodeBatchedLoader loader(d, unequal_partition(), LoaderOptions().batch_size(2));
    if (i % 2) loader.next();
  }
  SUCCEED();
}

TEST(Loader, RejectsBadArguments) {
  const Dataset d = indexed_dataset(40);
  const Partition p = unequal_partition();
  using testing::expect_error;
  expect_error<ConfigError>([&] { NodeBatchedLoader(d, p, LoaderOptions().batch_size(0)); },
                            {"batch size must be >= 1"});
  expect_error<ConfigError>(
      [&] {
        NodeBatchedLoader(d, p, LoaderOptions().nodes({0, 3}));
      },
      {"node 3 is not in the partition of 3 nodes"});
  expect_error<ConfigError>(
      [&] {
        NodeBatchedLoader(d, p, LoaderOptions().nodes({1, 1}));
      },
      {"listed twice"});
  Partition empty_node = p;
  empty_node.node_indices[1].clear();
  expect_error<ConfigError>([&] { NodeBatchedLoader(d, empty_node, LoaderOptions()); },
                            {"node 1 has no training samples"});
  Partition outside = p;
  outside.node_indices[2].push_back(40);
  expect_error<UserError>([&] { NodeBatchedLoader(d, outside, LoaderOptions()); },
                          {"index 40", "[0, 40)"});
  AugmentOptions shrink;
  shrink.pad_height = 4;
  expect_error<ConfigError>([&] { NodeBatchedLoader(d, p, LoaderOptions().augment(shrink)); },
                            {"cannot pad", "(data.pad_to"});
  // Padding up to the images' side (6, or 8 after padding to 8x8) is a crop; beyond it, an error.
  NodeBatchedLoader(d, p, LoaderOptions().augment(pad_flip_and_crop(6, 0, 0)));
  NodeBatchedLoader(d, p, LoaderOptions().augment(pad_flip_and_crop(8, 8, 8)));
  expect_error<ConfigError>(
      [&] { NodeBatchedLoader(d, p, LoaderOptions().augment(pad_flip_and_crop(7, 0, 0))); },
      {"crop padding 7 exceeds the images' side 6", "expected 0 to 6 (data.crop_padding)"});
  expect_error<ConfigError>(
      [&] {
        NodeBatchedLoader(d, p, LoaderOptions().augment(pad_flip_and_crop(2147483647, 8, 8)));
      },
      {"crop padding 2147483647 exceeds the images' side 8"});
}

TEST(EvalBatches, CoversTheSetInOrder) {
  const Dataset d = indexed_dataset(23);
  AugmentOptions aug;  // random parts are ignored at evaluation, padding applies
  aug.horizontal_flip = true;
  aug.crop_padding = 4;
  aug.pad_height = 8;
  aug.pad_width = 8;
  const EvalBatches batches(d, 10, aug);
  EXPECT_EQ(batches.num_batches(), 3);
  int64_t next = 0;
  for (const EvalBatch& b : batches) {
    const int64_t n = b.targets.size(0);
    EXPECT_EQ(b.inputs.sizes(), (std::vector<int64_t>{n, 2, 8, 8}));
    // The centre pixel (after 1 pixel of padding on each side) holds the sample index.
    const auto ids = b.inputs.select(1, 0).select(1, 4).select(1, 4).round().to(torch::kInt64);
    EXPECT_TRUE(torch::equal(ids, torch::arange(next, next + n, torch::kInt64)));
    EXPECT_EQ(b.inputs[0][0][0][0].item<float>(), 0.0f);  // padding is zero pixels
    next += n;
  }
  EXPECT_EQ(next, 23);
  testing::expect_error<ConfigError>([&] { EvalBatches(d, 0); }, {"batch size"});
}

}  // namespace
}  // namespace lpdt::data
