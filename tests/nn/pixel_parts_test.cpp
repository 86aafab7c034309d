// How EvoNorm-S0's CUDA kernels split a sample's pixels over blocks (nn/cuda/pixel_parts.h):
// parts tile the pixels in order, none empty, enough blocks for small launches, and at least
// kMinPixelsPerThread pixels for each thread.
#include "lpdt/nn/cuda/pixel_parts.h"

#include <gtest/gtest.h>

namespace lpdt::nn::cuda_kernels {
namespace {

TEST(PixelParts, TileThePixelsInOrderWithoutEmptyParts) {
  for (const std::int64_t base : {1, 3, 15, 256, 512, 1024, 4096}) {
    for (const std::int64_t pixels : {1, 7, 64, 256, 784, 1024, 4097}) {
      for (const std::int64_t rows : {1, 8, 16, 128, 256}) {
        SCOPED_TRACE("base " + std::to_string(base) + ", pixels " + std::to_string(pixels) +
                     ", rows " + std::to_string(rows));
        const PixelParts parts = pixel_parts(base, pixels, rows);
        ASSERT_GE(parts.count, 1);
        ASSERT_EQ(parts.begin(0), 0);
        for (std::int64_t part = 0; part < parts.count; ++part) {
          ASSERT_LT(parts.begin(part), parts.end(part));  // nonempty
          if (part + 1 < parts.count) ASSERT_EQ(parts.end(part), parts.begin(part + 1));
        }
        ASSERT_EQ(parts.end(parts.count - 1), pixels);
        if (parts.count > 1) {
          // Each thread of a part walks at least kMinPixelsPerThread pixels (but the last part)
          // and the split stops once the launch has its target.
          EXPECT_GE(parts.length, rows * kMinPixelsPerThread);
          EXPECT_LT((parts.count - 1) * base, kTargetBlocks);
        }
      }
    }
  }
}

TEST(PixelParts, ResNet20StageOneOf16NodesGetsEightTimesTheBlocks) {
  // [32 samples, 16 nodes x 16 channels, 32 x 32], 32-channel tiles of 8 pixel rows: 256 blocks.
  const PixelParts parts = pixel_parts(8 * 32, 32 * 32, 256 / 32);
  EXPECT_EQ(parts.count, 8);
  EXPECT_EQ(parts.length, 128);
  // Stage 3 (8 x 8 pixels, 1,024 blocks already) stays whole.
  EXPECT_EQ(pixel_parts(32 * 32, 8 * 8, 8).count, 1);
}

}  // namespace
}  // namespace lpdt::nn::cuda_kernels
