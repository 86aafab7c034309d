// The parameter segments' gather and scatter (param_segments_kernels.h): one block per (chunk of
// kSegmentChunk elements, segment, node), slots passed by value, up to 64 per launch.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "lpdt/core/cuda/launch_check.h"
#include "lpdt/nn/cuda/param_segment_place.h"
#include "lpdt/nn/cuda/param_segments_kernels.h"

namespace lpdt::nn::cuda_kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kSlotsPerLaunch = 64;

struct SlotTable {
  SegmentSlot slot[kSlotsPerLaunch];
};

// Chunk blockIdx.x of slot blockIdx.y of node blockIdx.z (blocks past a slot's last chunk
// return at once).
__global__ void gather_kernel(const float* __restrict__ params, std::int64_t row_stride,
                              SlotTable table) {
  const SegmentSlot& s = table.slot[blockIdx.y];
  const auto numel = static_cast<std::int32_t>(s.numel);
  const std::int32_t begin = static_cast<std::int32_t>(blockIdx.x) * kSegmentChunk;
  if (begin >= numel) return;
  const std::int32_t end = numel - begin < kSegmentChunk ? numel : begin + kSegmentChunk;
  const std::int64_t node = blockIdx.z;
  const float* row = params + node * row_stride + s.offset;
  float* tensor = s.tensor + node * s.numel;
  for (std::int32_t j = begin + static_cast<std::int32_t>(threadIdx.x); j < end; j += kThreads) {
    tensor[place_in_segment(j, s.in_channels, s.positions)] = row[j];
  }
}

__global__ void scatter_kernel(float* __restrict__ grad, std::int64_t row_stride, SlotTable table) {
  const SegmentSlot& s = table.slot[blockIdx.y];
  const auto numel = static_cast<std::int32_t>(s.numel);
  const std::int32_t begin = static_cast<std::int32_t>(blockIdx.x) * kSegmentChunk;
  if (begin >= numel) return;
  const std::int32_t end = numel - begin < kSegmentChunk ? numel : begin + kSegmentChunk;
  const std::int64_t node = blockIdx.z;
  float* row = grad + node * row_stride + s.offset;
  const float* tensor = s.tensor == nullptr ? nullptr : s.tensor + node * s.numel;
  for (std::int32_t j = begin + static_cast<std::int32_t>(threadIdx.x); j < end; j += kThreads) {
    row[j] = tensor == nullptr ? 0.0f : tensor[place_in_segment(j, s.in_channels, s.positions)];
  }
}

template <typename Launch>
void in_launches(std::int64_t nodes, const SegmentSlot* slots, std::int64_t count, const char* what,
                 Launch&& launch) {
  if (nodes < 1 || nodes > 65535) {
    throw std::invalid_argument(std::string("CUDA parameter segments (") + what +
                                "): " + std::to_string(nodes) + " nodes; expected 1 to 65535");
  }
  for (std::int64_t first = 0; first < count; first += kSlotsPerLaunch) {
    SlotTable table{};
    unsigned used = 0;
    std::int64_t longest = 0;
    for (std::int64_t i = first; i < count && i < first + kSlotsPerLaunch; ++i) {
      if (slots[i].numel >= (std::int64_t{1} << 31)) {
        throw std::invalid_argument(std::string("CUDA parameter segments (") + what +
                                    "): a segment of " + std::to_string(slots[i].numel) +
                                    " elements per node; expected under 2^31");
      }
      if (slots[i].numel > 0) table.slot[used++] = slots[i];
      longest = slots[i].numel > longest ? slots[i].numel : longest;
    }
    if (used == 0) continue;
    const auto chunks = static_cast<unsigned>((longest + kSegmentChunk - 1) / kSegmentChunk);
    launch(dim3(chunks, used, static_cast<unsigned>(nodes)), table);
    lpdt::cuda_kernels::check_launch(std::string("CUDA parameter segments kernel ") + what);
  }
}

}  // namespace

void gather_param_segments(const float* params, std::int64_t nodes, std::int64_t row_stride,
                           const SegmentSlot* slots, std::int64_t count, void* stream) {
  in_launches(nodes, slots, count, "gather", [&](dim3 grid, const SlotTable& table) {
    gather_kernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(params, row_stride,
                                                                            table);
  });
}

void scatter_param_segments(float* grad, std::int64_t nodes, std::int64_t row_stride,
                            const SegmentSlot* slots, std::int64_t count, void* stream) {
  in_launches(nodes, slots, count, "scatter", [&](dim3 grid, const SlotTable& table) {
    scatter_kernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(grad, row_stride,
                                                                             table);
  });
}

}  // namespace lpdt::nn::cuda_kernels
