#include "lpdt/data/transforms.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "lpdt/core/error.h"
#include "lpdt/core/rng.h"
#include "test_util.h"

namespace lpdt::data {
namespace {

// Float32 normalisation: (x / 255 - mean) / std, computed two ways; they may differ by rounding.
constexpr float kNormalizeTolerance = 1e-5f;

torch::Tensor ramp_images(int64_t n, int64_t c, int64_t h, int64_t w) {
  return (torch::arange(n * c * h * w, torch::kInt64) % 251).to(torch::kUInt8).view({n, c, h, w});
}

// A plain per-sample reference for the crop: pad one image, cut the window.
torch::Tensor crop_reference(const torch::Tensor& images, int64_t p, const torch::Tensor& offsets) {
  std::vector<torch::Tensor> out;
  for (int64_t i = 0; i < images.size(0); ++i) {
    const auto padded = torch::constant_pad_nd(images[i], {p, p, p, p}, 0);
    const int64_t top = offsets[i][0].item<int64_t>(), left = offsets[i][1].item<int64_t>();
    out.push_back(padded.narrow(1, top, images.size(2)).narrow(2, left, images.size(3)));
  }
  return torch::stack(out);
}

TEST(Transforms, NormalizeValues) {
  auto images = torch::tensor({0, 255, 51, 102}, torch::kUInt8).view({1, 2, 1, 2});
  const auto out = normalize(images, {0.5, 0.2}, {0.25, 0.1});
  EXPECT_EQ(out.scalar_type(), torch::kFloat32);
  EXPECT_EQ(out.sizes(), images.sizes());
  EXPECT_NEAR(out[0][0][0][0].item<float>(), (0.0f - 0.5f) / 0.25f, kNormalizeTolerance);
  EXPECT_NEAR(out[0][0][0][1].item<float>(), (1.0f - 0.5f) / 0.25f, kNormalizeTolerance);
  EXPECT_NEAR(out[0][1][0][0].item<float>(), (0.2f - 0.2f) / 0.1f, kNormalizeTolerance);
  EXPECT_NEAR(out[0][1][0][1].item<float>(), (0.4f - 0.2f) / 0.1f, kNormalizeTolerance);
  // Any leading dims: [k, b, C, H, W].
  const auto five =
      normalize(ramp_images(6, 3, 4, 4).view({2, 3, 3, 4, 4}), {0.1, 0.2, 0.3}, {0.4, 0.5, 0.6});
  const auto reference = (ramp_images(6, 3, 4, 4).to(torch::kFloat32) / 255.0 -
                          torch::tensor({0.1f, 0.2f, 0.3f}).view({3, 1, 1})) /
                         torch::tensor({0.4f, 0.5f, 0.6f}).view({3, 1, 1});
  EXPECT_TRUE(torch::allclose(five.view({6, 3, 4, 4}), reference, 0, kNormalizeTolerance));
}

TEST(Transforms, PadTo) {
  const auto images = ramp_images(2, 1, 28, 28);
  const auto out = pad_to(images, 32, 32);
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{2, 1, 32, 32}));
  EXPECT_TRUE(torch::equal(out.narrow(2, 2, 28).narrow(3, 2, 28), images));
  EXPECT_EQ(out.sum().item<int64_t>(), images.sum().item<int64_t>());
  EXPECT_TRUE(torch::equal(pad_to(images, 28, 28), images));
  const auto odd = pad_to(ramp_images(1, 1, 3, 3), 6, 4);  // top 1, bottom 2, left 0, right 1
  EXPECT_TRUE(torch::equal(odd.narrow(2, 1, 3).narrow(3, 0, 3), ramp_images(1, 1, 3, 3)));
  testing::expect_error<ConfigError>([&] { pad_to(images, 27, 32); }, {"28x28", "27x32"});
}

TEST(Transforms, CropKeepsShapeAndMatchesPerSampleReference) {
  const auto images = ramp_images(17, 3, 8, 6);
  Rng rng = Rng::stream(1, 0, StreamPurpose::kTest);
  const auto offsets = draw_crop_offsets(17, 4, rng);
  EXPECT_GE(offsets.min().item<int64_t>(), 0);
  EXPECT_LE(offsets.max().item<int64_t>(), 8);
  const auto out = apply_crop(images, 4, offsets);
  EXPECT_EQ(out.sizes(), images.sizes());
  EXPECT_TRUE(torch::equal(out, crop_reference(images, 4, offsets)));
  // Offset (p, p) is the identity.
  EXPECT_TRUE(torch::equal(apply_crop(images, 4, torch::full({17, 2}, 4, torch::kInt64)), images));
}

TEST(Transforms, CropByGatherEqualsPerSampleCopies) {
  // Random pixels and odd sizes, so that a row or column taken from the wrong place shows.
  torch::manual_seed(5);
  const auto images = torch::randint(0, 256, {13, 3, 7, 9}, torch::kUInt8);
  Rng rng = Rng::stream(4, 0, StreamPurpose::kTest);
  const auto offsets = draw_crop_offsets(13, 3, rng);
  const auto by_gather = apply_crop_by_gather(images, 3, offsets);
  EXPECT_EQ(by_gather.sizes(), images.sizes());
  EXPECT_TRUE(torch::equal(by_gather, crop_reference(images, 3, offsets)));
  EXPECT_TRUE(torch::equal(by_gather, apply_crop(images, 3, offsets)));
  EXPECT_TRUE(torch::equal(apply_crop_by_gather(images, 3, torch::full({13, 2}, 3, torch::kInt64)),
                           images));
  auto outside = offsets.clone();
  outside[4][1] = 7;
  testing::expect_error<InternalError>([&] { apply_crop_by_gather(images, 3, outside); },
                                       {"out of [0, 2 * padding]"});
  testing::expect_error<InternalError>([&] { apply_crop(images, 3, outside); },
                                       {"out of [0, 2 * padding]"});
}

TEST(Transforms, FlipIsItsOwnInverse) {
  const auto images = ramp_images(9, 2, 4, 5);
  Rng rng = Rng::stream(2, 0, StreamPurpose::kTest);
  const auto mask = draw_flips(9, rng);
  const auto once = apply_flips(images, mask);
  EXPECT_TRUE(torch::equal(apply_flips(once, mask), images));
  for (int64_t i = 0; i < 9; ++i) {
    const auto expected = mask[i].item<bool>() ? images[i].flip({2}) : images[i];
    EXPECT_TRUE(torch::equal(once[i], expected)) << "sample " << i;
  }
  EXPECT_GT(mask.sum().item<int64_t>(), 0);
  EXPECT_LT(mask.sum().item<int64_t>(), 9);
}

TEST(Transforms, DeterministicBySeed) {
  const auto images = ramp_images(32, 3, 8, 8);
  auto run = [&](std::uint64_t seed) {
    Rng rng = Rng::stream(seed, 5, StreamPurpose::kAugment);
    return random_crop(random_horizontal_flip(images, rng), 2, rng);
  };
  EXPECT_TRUE(torch::equal(run(7), run(7)));
  EXPECT_FALSE(torch::equal(run(7), run(8)));
}

TEST(Transforms, AugmentPadsThenFlipsThenCrops) {
  const auto images = ramp_images(4, 1, 28, 28);
  AugmentOptions opts;
  opts.crop_padding = 4;
  opts.horizontal_flip = true;
  opts.pad_height = 32;
  opts.pad_width = 32;
  Rng a = Rng::stream(3, 0, StreamPurpose::kAugment);
  const auto draws = draw_augment(4, opts, a);
  const auto out = apply_augment(images, opts, draws);
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{4, 1, 32, 32}));
  const auto expected =
      apply_crop(apply_flips(pad_to(images, 32, 32), draws.flips), 4, draws.crop_offsets);
  EXPECT_TRUE(torch::equal(out, expected));
  // The draws are the flips, then the crop offsets, from one stream.
  Rng b = Rng::stream(3, 0, StreamPurpose::kAugment);
  EXPECT_TRUE(torch::equal(draw_flips(4, b), draws.flips));
  EXPECT_TRUE(torch::equal(draw_crop_offsets(4, 4, b), draws.crop_offsets));
}

}  // namespace
}  // namespace lpdt::data
