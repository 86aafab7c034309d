// The parameter segments' gather and scatter (param_segments_kernels.h): one block per (segment,
// node), slots passed by value, up to 64 per launch.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "lpdt/core/cuda/launch_check.h"
#include "lpdt/nn/cuda/param_segments_kernels.h"

namespace lpdt::nn::cuda_kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kSlotsPerLaunch = 64;

struct SlotTable {
  SegmentSlot slot[kSlotsPerLaunch];
};

// Element j of a node's segment (its parameter's own order) -> its place in the segment tensor.
__device__ std::int64_t place_of(const SegmentSlot& s, std::int64_t j) {
  if (s.in_channels == 0) return j;
  const std::int64_t per_out = static_cast<std::int64_t>(s.in_channels) * s.positions;
  const std::int64_t out = j / per_out, rest = j - out * per_out;
  const std::int64_t in = rest / s.positions, position = rest - in * s.positions;
  return out * per_out + position * s.in_channels + in;
}

__global__ void gather_kernel(const float* __restrict__ params, std::int64_t row_stride,
                              SlotTable table) {
  const SegmentSlot& s = table.slot[blockIdx.x];
  const std::int64_t node = blockIdx.y;
  const float* row = params + node * row_stride + s.offset;
  float* tensor = s.tensor + node * s.numel;
  for (std::int64_t j = threadIdx.x; j < s.numel; j += kThreads) tensor[place_of(s, j)] = row[j];
}

__global__ void scatter_kernel(float* __restrict__ grad, std::int64_t row_stride, SlotTable table) {
  const SegmentSlot& s = table.slot[blockIdx.x];
  const std::int64_t node = blockIdx.y;
  float* row = grad + node * row_stride + s.offset;
  const float* tensor = s.tensor == nullptr ? nullptr : s.tensor + node * s.numel;
  for (std::int64_t j = threadIdx.x; j < s.numel; j += kThreads) {
    row[j] = tensor == nullptr ? 0.0f : tensor[place_of(s, j)];
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
    for (std::int64_t i = first; i < count && i < first + kSlotsPerLaunch; ++i) {
      if (slots[i].numel > 0) table.slot[used++] = slots[i];
    }
    if (used == 0) continue;
    launch(dim3(used, static_cast<unsigned>(nodes)), table);
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
