#pragma once
// Where the parameter segments' gather and scatter kernels (param_segments_kernels.cu) put each
// element, as host-device code, tested on the CPU (tests/nn/param_segment_place_test.cpp).
#include <cstdint>

#include "lpdt/core/host_device.h"

namespace lpdt::nn::cuda_kernels {

// Elements of one node's segment one block copies: a 36,864-element weight (64 x 64 x 3 x 3) in
// nine blocks, not one (one block per segment took 69-94 us a launch on an H100:
// docs/benchmarks.md, GPU, item 16).
constexpr std::int32_t kSegmentChunk = 4096;

// Element j of a node's segment, in its parameter's own order, -> its place in the segment's
// tensor: j itself (in_channels = 0), or for a convolution weight [out, in, positions] stored
// channels-last, (out, position, in). 32-bit: a node's segment has fewer than 2^31 elements
// (checked by the caller).
LPDT_HOST_DEVICE inline std::int32_t place_in_segment(std::int32_t j, std::int32_t in_channels,
                                                      std::int32_t positions) {
  if (in_channels == 0) return j;
  const std::int32_t per_out = in_channels * positions;
  const std::int32_t out = j / per_out, rest = j - out * per_out;
  const std::int32_t in = rest / positions, position = rest - in * positions;
  return out * per_out + position * in_channels + in;
}

}  // namespace lpdt::nn::cuda_kernels
