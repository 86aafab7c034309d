#pragma once
// The parameter segments' gather and scatter on CUDA (nn/param_segments.h): between the [k, P]
// parameter rows and one dense [k, shape...] tensor per segment, all segments in one launch (or a
// few). Plain C++ (no LibTorch): param_segments.cpp passes device pointers and the stream.
#include <cstdint>

namespace lpdt::nn::cuda_kernels {

// One segment: columns [offset, offset + numel) of each node's row; its tensor holds node n's
// values at n * numel. A convolution weight [out, in, kh, kw] (in_channels > 0) is stored with its
// input channels innermost (channels-last: element (o, i, p) of p = kh * kw positions at
// (o * positions + p) * in + i), as cuDNN takes it for channels-last activations; other segments
// in their own order.
struct SegmentSlot {
  std::int64_t offset = 0, numel = 0;
  std::int32_t in_channels = 0, positions = 1;
  float* tensor = nullptr;  // gather: written; scatter: read (nullptr: a zero gradient)
};

// tensor[slot] <- params[:, slot columns] for every slot. params: [nodes, row_stride].
void gather_param_segments(const float* params, std::int64_t nodes, std::int64_t row_stride,
                           const SegmentSlot* slots, std::int64_t count, void* stream);

// grad[:, slot columns] <- tensor[slot] (zeros for a null tensor) for every slot. grad:
// [nodes, row_stride], each of its columns in one slot.
void scatter_param_segments(float* grad, std::int64_t nodes, std::int64_t row_stride,
                            const SegmentSlot* slots, std::int64_t count, void* stream);

}  // namespace lpdt::nn::cuda_kernels
