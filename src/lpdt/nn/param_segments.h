#pragma once
// A pass's parameters as one dense tensor per layout segment, gathered from the [k, P] parameter
// rows in one kernel on CUDA. Context::param's views of the rows are strided (node i's values P
// columns after node i - 1's), so each layer made a dense copy of its weights (a reshape to
// [k*out, ...] and a channels-last copy for cuDNN, and per-channel copies of normaliser
// parameters): about 150 small copies per 8-bit ResNet-20 step, each way (docs/benchmarks.md,
// GPU, item 16).
#include <ATen/ATen.h>

#include <vector>

#include "lpdt/core/layer_layout.h"

namespace lpdt::nn {

// Whether a segment's tensor keeps its input channels innermost (channels-last): a convolution
// weight [out, in, kh, kw] with kh * kw > 1, as cuDNN takes it next to channels-last activations.
bool segment_channels_last(const LayerSegment& segment);

// params: [k, P] float32 (P = layout.total_numel). -> one [k, shape...] tensor per segment of
// layout, the values of its columns, each node's values one dense block (channels-last strides
// where segment_channels_last, contiguous otherwise); the gradients of all of them flow back into
// params in one pass (one scatter kernel on CUDA).
std::vector<at::Tensor> gather_param_segments(const at::Tensor& params, const LayerLayout& layout);

// Whether Context::param gathers params' segments (gather_param_segments) rather than viewing
// them in place: on CUDA in builds with lpdt's kernels, where one gather replaces each layer's
// copies. On the CPU the per-node layers copy each node's weights anyway.
bool param_segments_gathered(const at::Tensor& params);

}  // namespace lpdt::nn
