#pragma once
// How EvoNorm-S0's channels-last CUDA kernels (evonorm_s0_kernels.cu) split the pixels of one
// (channel tile, sample) over several thread blocks, as host-device code tested on the CPU
// (tests/nn/pixel_parts_test.cpp).
//
// One block per (tile, sample) gave a 16-node ResNet-20 stage-1 layer 8 x 32 = 256 blocks of 256
// threads, two per H100 multiprocessor where eight fit, each thread walking 128 pixels: the
// backward took 96 us a call (docs/benchmarks.md, GPU, item 18). The parts' sums are combined in
// part order by the kernel that needs them, so the results depend on the shape only, not on the
// GPU.
#include <cstdint>

#include "lpdt/core/host_device.h"

namespace lpdt::nn::cuda_kernels {

// Blocks a launch aims for: about two waves of 8 blocks on each of an H100's 132
// multiprocessors.
constexpr std::int64_t kTargetBlocks = 2048;
// Pixels each thread walks at least: fewer make a block's fixed cost (the shared-memory sums, the
// parameters' loads) dominate.
constexpr std::int64_t kMinPixelsPerThread = 8;

struct PixelParts {
  std::int64_t pixels = 0;  // of a sample
  std::int64_t count = 1;   // parts, each nonempty
  std::int64_t length = 0;  // pixels per part; the last part may be shorter

  LPDT_HOST_DEVICE std::int64_t begin(std::int64_t part) const { return part * length; }
  LPDT_HOST_DEVICE std::int64_t end(std::int64_t part) const {
    const std::int64_t e = (part + 1) * length;
    return e < pixels ? e : pixels;
  }
};

// The parts for a launch of `base_blocks` blocks (tiles x samples) whose threads step `rows`
// pixels at a time.
LPDT_HOST_DEVICE inline PixelParts pixel_parts(std::int64_t base_blocks, std::int64_t pixels,
                                               std::int64_t rows) {
  PixelParts parts;
  parts.pixels = pixels;
  if (pixels <= 0 || base_blocks <= 0) return parts;
  std::int64_t count = (kTargetBlocks + base_blocks - 1) / base_blocks;
  const std::int64_t most = pixels / (rows * kMinPixelsPerThread);
  if (count > most) count = most;
  if (count < 1) count = 1;
  parts.length = (pixels + count - 1) / count;
  parts.count = (pixels + parts.length - 1) / parts.length;  // no empty last part
  return parts;
}

}  // namespace lpdt::nn::cuda_kernels
