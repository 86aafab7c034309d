// RandomResizedCrop, the evaluation centre crop and the antialiased resize behind them, each
// against a plain reference written from torchvision's / PIL's description.
#include <gtest/gtest.h>
#include <torch/types.h>

#include <chrono>
#include <cmath>

#include "lpdt/core/error.h"
#include "lpdt/core/rng.h"
#include "lpdt/data/eval_batches.h"
#include "lpdt/data/image_resize.h"
#include "lpdt/data/loader.h"
#include "lpdt/data/synthetic.h"
#include "lpdt/data/transforms.h"
#include "test_util.h"

namespace lpdt::data {
namespace {

// The reference resize computes in double, ATen in float32: after rounding to uint8 they may
// land on neighbouring levels.
constexpr int kResizeTolerance = 1;

// Python's round(): halves to even, written out (no reliance on the FPU rounding mode).
int64_t python_round(double x) {
  const double f = std::floor(x);
  const double diff = x - f;
  if (diff > 0.5) return static_cast<int64_t>(f) + 1;
  if (diff < 0.5) return static_cast<int64_t>(f);
  const auto fi = static_cast<int64_t>(f);
  return fi % 2 == 0 ? fi : fi + 1;
}

// torchvision.transforms.RandomResizedCrop.get_params (torchvision 0.14), line by line, with
// torch.empty(1).uniform_(a, b) -> a + (b - a) * rng.uniform() and
// torch.randint(0, n, (1,)) -> rng.below(n). Returns {top, left, h, w}.
std::array<int64_t, 4> reference_get_params(int64_t height, int64_t width, Rng& rng) {
  const double scale[2] = {0.08, 1.0};
  const double ratio[2] = {3.0 / 4.0, 4.0 / 3.0};
  const double area = static_cast<double>(height) * static_cast<double>(width);
  const double log_ratio[2] = {std::log(ratio[0]), std::log(ratio[1])};
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * (scale[0] + (scale[1] - scale[0]) * rng.uniform());
    const double aspect_ratio =
        std::exp(log_ratio[0] + (log_ratio[1] - log_ratio[0]) * rng.uniform());
    const int64_t w = python_round(std::sqrt(target_area * aspect_ratio));
    const int64_t h = python_round(std::sqrt(target_area / aspect_ratio));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const auto i = static_cast<int64_t>(rng.below(static_cast<std::uint64_t>(height - h + 1)));
      const auto j = static_cast<int64_t>(rng.below(static_cast<std::uint64_t>(width - w + 1)));
      return {i, j, h, w};
    }
  }
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  int64_t w, h;
  if (in_ratio < ratio[0]) {
    w = width;
    h = python_round(static_cast<double>(w) / ratio[0]);
  } else if (in_ratio > ratio[1]) {
    h = height;
    w = python_round(static_cast<double>(h) * ratio[1]);
  } else {
    w = width;
    h = height;
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

// PIL's / ATen's antialiased bilinear resampling along one axis (ImagingResample's
// precompute_coeffs with the triangle filter, support 1): scale = in / out,
// centre = (i + 0.5) * scale, taps j in [centre - s, centre + s) with s = max(scale, 1),
// weights (1 - |(j + 0.5 - centre) / max(scale, 1)|)+, normalised. Returns [out, in] weights.
std::vector<std::vector<double>> reference_weights(int64_t in, int64_t out) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double support = std::max(scale, 1.0);
  std::vector<std::vector<double>> weights(out, std::vector<double>(in, 0.0));
  for (int64_t i = 0; i < out; ++i) {
    const double centre = (i + 0.5) * scale;
    const auto lo = std::max<int64_t>(static_cast<int64_t>(centre - support + 0.5), 0);
    const auto hi = std::min<int64_t>(static_cast<int64_t>(centre + support + 0.5), in);
    double total = 0;
    for (int64_t j = lo; j < hi; ++j) {
      const double x = (j + 0.5 - centre) / support;
      weights[i][j] = std::max(0.0, 1.0 - std::abs(x));
      total += weights[i][j];
    }
    for (int64_t j = lo; j < hi; ++j) weights[i][j] /= total;
  }
  return weights;
}

// images: [n, C, H, W] uint8 -> [n, C, out_h, out_w] uint8, separable, in double.
torch::Tensor reference_resize(const torch::Tensor& images, int64_t out_h, int64_t out_w) {
  const auto wy = reference_weights(images.size(2), out_h);
  const auto wx = reference_weights(images.size(3), out_w);
  const auto to_matrix = [](const std::vector<std::vector<double>>& w) {
    auto m = torch::empty({static_cast<int64_t>(w.size()), static_cast<int64_t>(w[0].size())},
                          torch::kFloat64);
    for (std::size_t i = 0; i < w.size(); ++i) {
      for (std::size_t j = 0; j < w[i].size(); ++j) {
        m[static_cast<int64_t>(i)][static_cast<int64_t>(j)] = w[i][j];
      }
    }
    return m;
  };
  const auto x = images.to(torch::kFloat64);
  const auto out = torch::matmul(torch::matmul(to_matrix(wy), x), to_matrix(wx).t());
  return out.round().clamp(0, 255).to(torch::kUInt8);
}

torch::Tensor random_images(int64_t n, int64_t c, int64_t h, int64_t w, std::uint64_t seed) {
  Rng rng(seed);
  auto out = torch::empty({n, c, h, w}, torch::kUInt8);
  auto* p = out.data_ptr<std::uint8_t>();
  for (int64_t i = 0; i < out.numel(); ++i) p[i] = static_cast<std::uint8_t>(rng.below(256));
  return out;
}

TEST(ResizedCrop, DrawsMatchTorchvisionReference) {
  for (const auto& [h, w] : std::vector<std::pair<int64_t, int64_t>>{
           {160, 160}, {32, 32}, {128, 200}, {300, 90}, {10, 200}, {1, 1}}) {
    Rng ours(7), theirs(7);
    const auto boxes = draw_resized_crop_boxes(500, h, w, ours);
    ASSERT_EQ(boxes.sizes(), (std::vector<int64_t>{500, 4}));
    for (int64_t i = 0; i < 500; ++i) {
      const auto expected = reference_get_params(h, w, theirs);
      for (int k = 0; k < 4; ++k) {
        ASSERT_EQ(boxes[i][k].item<int64_t>(), expected[k])
            << h << "x" << w << " sample " << i << " field " << k;
      }
    }
    EXPECT_EQ(ours.next_u64(), theirs.next_u64()) << "the streams advanced differently";
  }
  // 10x200 (ratio 20): no attempt fits, always the fallback: full height, width round(10 * 4/3).
  Rng rng(1);
  const auto fallback = draw_resized_crop_boxes(3, 10, 200, rng);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(fallback[i][0].item<int64_t>(), 0);
    EXPECT_EQ(fallback[i][1].item<int64_t>(), (200 - 13) / 2);
    EXPECT_EQ(fallback[i][2].item<int64_t>(), 10);
    EXPECT_EQ(fallback[i][3].item<int64_t>(), 13);
  }
}

TEST(ResizedCrop, BoundsAndStatistics) {
  const int64_t n = 20000, side = 160;
  Rng rng(2024);
  const auto boxes = draw_resized_crop_boxes(n, side, side, rng);
  const auto top = boxes.select(1, 0), left = boxes.select(1, 1);
  const auto h = boxes.select(1, 2), w = boxes.select(1, 3);
  EXPECT_GE(top.min().item<int64_t>(), 0);
  EXPECT_GE(left.min().item<int64_t>(), 0);
  EXPECT_GE(h.min().item<int64_t>(), 1);
  EXPECT_LE((top + h).max().item<int64_t>(), side);
  EXPECT_LE((left + w).max().item<int64_t>(), side);
  // Area fraction in [0.08, 1] and aspect in [3/4, 4/3], up to rounding of w and h to integers.
  const auto hf = h.to(torch::kFloat64), wf = w.to(torch::kFloat64);
  const auto fraction = hf * wf / static_cast<double>(side * side);
  EXPECT_GE(fraction.min().item<double>(), 0.075);
  EXPECT_LE(fraction.max().item<double>(), 1.0);
  const auto log_ratio = (wf / hf).log();
  EXPECT_GE(log_ratio.min().item<double>(), std::log(0.75) - 0.03);
  EXPECT_LE(log_ratio.max().item<double>(), std::log(4.0 / 3.0) + 0.03);
  // Log-ratio symmetric around 0. On a square image an attempt (area fraction f uniform on
  // [0.08, 1], ratio r) is accepted when f * max(r, 1/r) <= 1 (86% of attempts); the accepted
  // fractions then average 0.4777 (numerical integration), below the unconditioned 0.54.
  constexpr double kAcceptedMeanFraction = 0.4777;
  constexpr double kMeanTolerance = 0.006;  // about 4 standard errors at n = 20000
  EXPECT_NEAR(log_ratio.mean().item<double>(), 0.0, 0.01);
  EXPECT_NEAR(fraction.mean().item<double>(), kAcceptedMeanFraction, kMeanTolerance);
  // Offsets uniform over the free range: top / (160 - h) averages 1/2.
  const auto free = (side - h).to(torch::kFloat64);
  const auto has_room = free > 0;
  const auto relative = top.to(torch::kFloat64).masked_select(has_room) / free.masked_select(has_room);
  EXPECT_NEAR(relative.mean().item<double>(), 0.5, 0.01);
}

TEST(ResizedCrop, ResizeMatchesReferenceFilter) {
  const auto images = random_images(2, 3, 37, 53, 5);
  for (const auto& [oh, ow] : std::vector<std::pair<int64_t, int64_t>>{
           {16, 16}, {37, 20}, {60, 90}, {11, 53}, {128, 128}}) {
    const auto ours = resize_bilinear(images, oh, ow);
    ASSERT_EQ(ours.sizes(), (std::vector<int64_t>{2, 3, oh, ow}));
    const auto reference = reference_resize(images, oh, ow);
    EXPECT_LE((ours.to(torch::kInt32) - reference.to(torch::kInt32)).abs().max().item<int>(),
              kResizeTolerance)
        << oh << "x" << ow;
  }
  EXPECT_TRUE(torch::equal(resize_bilinear(images, 37, 53), images));
}

TEST(ResizedCrop, ApplyCutsAndResizesEachBox) {
  const auto images = random_images(4, 3, 40, 48, 9);
  const auto boxes =
      torch::tensor({0, 0, 40, 48, 5, 7, 20, 30, 10, 0, 30, 12, 0, 8, 24, 24}, torch::kInt64)
          .view({4, 4});
  const auto out = apply_resized_crop(images, boxes, 24);
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{4, 3, 24, 24}));
  for (int64_t i = 0; i < 4; ++i) {
    const auto b = boxes[i];
    const auto window = images.narrow(0, i, 1)
                            .narrow(2, b[0].item<int64_t>(), b[2].item<int64_t>())
                            .narrow(3, b[1].item<int64_t>(), b[3].item<int64_t>());
    EXPECT_TRUE(torch::equal(out[i], resize_bilinear(window.contiguous(), 24, 24)[0])) << i;
    EXPECT_LE((out[i].to(torch::kInt32) -
               reference_resize(window.contiguous(), 24, 24)[0].to(torch::kInt32))
                  .abs()
                  .max()
                  .item<int>(),
              kResizeTolerance)
        << i;
  }
  // A 24x24 box at output size 24 is the window itself.
  EXPECT_TRUE(torch::equal(out[3], images[3].narrow(1, 0, 24).narrow(2, 8, 24)));
  // A box over a flat area gives that colour.
  auto quadrants = torch::zeros({1, 3, 32, 32}, torch::kUInt8);
  quadrants.narrow(2, 16, 16).narrow(3, 16, 16).fill_(200);
  const auto flat = apply_resized_crop(quadrants, torch::tensor({{17, 18, 10, 12}}), 24);
  EXPECT_EQ(flat.min().item<int>(), 200);
  EXPECT_EQ(flat.max().item<int>(), 200);
}

TEST(ResizedCrop, EvalCenterCrop) {
  EXPECT_EQ(center_crop_resize_side(224), 256);
  EXPECT_EQ(center_crop_resize_side(128), 146);
  EXPECT_EQ(center_crop_resize_side(140), 160);
  const auto images = random_images(3, 3, 160, 160, 11);
  // Stored at 160 = 140 / 0.875: only the centred crop.
  EXPECT_TRUE(torch::equal(eval_center_crop(images, 140), images.narrow(2, 10, 140).narrow(3, 10, 140)));
  // 128: resize to 146, then the centred 128 (offset round(18 / 2) = 9).
  const auto out = eval_center_crop(images, 128);
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{3, 3, 128, 128}));
  EXPECT_TRUE(torch::equal(out, resize_bilinear(images, 146, 146).narrow(2, 9, 128).narrow(3, 9, 128)));
}

TEST(ResizedCrop, LoaderAndEvalBatches) {
  const Dataset train = make_synthetic(SyntheticOptions().samples_per_class(8).height(20).width(20));
  Partition partition;
  partition.node_indices = {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}};
  AugmentOptions aug;
  aug.random_resized_crop = 16;
  aug.center_crop = 16;
  aug.horizontal_flip = true;
  const auto options = LoaderOptions().batch_size(4).seed(3).augment(aug).prefetch(false);
  NodeBatchedLoader a(train, partition, options), b(train, partition, options);
  const Batch first = a.next();
  EXPECT_EQ(first.inputs.sizes(), (std::vector<int64_t>{2, 4, 3, 16, 16}));
  EXPECT_TRUE(torch::equal(first.inputs, b.next().inputs));  // deterministic in the seed
  // Node 0's draws come from its own stream: boxes of 4 samples on 20x20 images, then flips.
  Rng rng = Rng::stream(3, 0, StreamPurpose::kAugment);
  const AugmentDraws draws = draw_augment(4, aug, rng, 20, 20);
  ASSERT_TRUE(draws.resized_crop_boxes.defined() && draws.flips.defined());
  EXPECT_FALSE(draws.crop_offsets.defined());
  // Without the random crop, training inputs get the evaluation crop (same size as eval).
  AugmentOptions eval_only;
  eval_only.center_crop = 16;
  NodeBatchedLoader plain(train, partition, LoaderOptions().batch_size(4).augment(eval_only));
  EXPECT_EQ(plain.next().inputs.sizes(), (std::vector<int64_t>{2, 4, 3, 16, 16}));
  const EvalBatches eval(train, 5, aug);
  const EvalBatch batch = eval.batch(0);
  EXPECT_EQ(batch.inputs.sizes(), (std::vector<int64_t>{5, 3, 16, 16}));
  const auto expected = normalize(eval_center_crop(train.images.narrow(0, 0, 5), 16), train.mean,
                                  train.std);
  EXPECT_TRUE(torch::equal(batch.inputs, expected));
  AugmentOptions bad;
  bad.random_resized_crop = -1;
  testing::expect_error<ConfigError>(
      [&] { NodeBatchedLoader loader{train, partition, LoaderOptions().augment(bad)}; },
      {"crop sizes", "-1"});
}

// Speed of the every-step transform on 2 cores; run with --gtest_also_run_disabled_tests.
TEST(ResizedCrop, DISABLED_BatchTiming) {
  const auto images = random_images(32, 3, 160, 160, 1);
  Rng rng(1);
  constexpr int kRepeats = 20;
  for (int64_t size : {128, 160}) {
    apply_resized_crop(images, draw_resized_crop_boxes(32, 160, 160, rng), size);  // warm up
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < kRepeats; ++r) {
      apply_resized_crop(images, draw_resized_crop_boxes(32, 160, 160, rng), size);
    }
    const double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start).count() / kRepeats;
    std::printf("random resized crop, 32 x [3, 160, 160] -> %lld: %.2f ms per batch\n",
                static_cast<long long>(size), ms);
  }
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < kRepeats; ++r) eval_center_crop(images, 128);
  std::printf("eval centre crop, 32 x [3, 160, 160] -> 128: %.2f ms per batch\n",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                      .count() / kRepeats);
}

}  // namespace
}  // namespace lpdt::data
