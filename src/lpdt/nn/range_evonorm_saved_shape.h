#pragma once
// Keeps a RangeEvoNormShape in an autograd node between forward and backward: both fused Range
// EvoNorm operations (CPU, range_evonorm_kernel.cpp; CUDA, range_evonorm_cuda.cpp) save it.
#include <torch/csrc/autograd/custom_function.h>
#include <torch/types.h>

#include "lpdt/nn/range_evonorm_kernel.h"

namespace lpdt::nn {

void save_shape(torch::autograd::AutogradContext* ctx, const RangeEvoNormShape& shape);
// The saved k, channels, groups, chunks, range factor, and whether (and how) the output gradient
// is quantized; the other fields keep their defaults.
RangeEvoNormShape load_shape(torch::autograd::AutogradContext* ctx);

}  // namespace lpdt::nn
