#pragma once
// 2x2 max pooling with stride 2 (LeNet-5's and VGG's pools) for inference on the CPU.
//
// Why our own: LibTorch 1.13's CPU max_pool2d always computes the int64 indices for backward,
// and over a channels-last tensor it vectorises across channels only, so a one-node pass (6 or 16
// channels: a node's LeNet-5 in evaluation) ran one element at a time: half of a LeNet-5
// evaluation's time (docs/benchmarks.md, "Scaling with the node count", 2026-11-29, evaluation).
// Where no gradient is asked for, this kernel returns the same tensor, bit for bit: each window
// scanned in LibTorch's order, (0,0) (0,1) (1,0) (1,1), a later element taken when greater or NaN,
// so the first maximum, or the last NaN, of the window (its sign of zero too).
#include <ATen/ATen.h>

namespace lpdt::nn {

// x: [N, C, H, W] -> [N, C, H / 2, W / 2] (a last odd row or column is dropped), the result of
// at::max_pool2d(x, {2, 2}, {2, 2}) in x's memory format. Takes the kernel for a float32 CPU
// tensor stored channels-last (the layout of the engine's convolutions) when no gradient is
// recorded; anything else goes to at::max_pool2d.
at::Tensor max_pool_2x2(const at::Tensor& x);

// Whether max_pool_2x2 takes the kernel for x (tests).
bool max_pool_2x2_takes_kernel(const at::Tensor& x);

}  // namespace lpdt::nn
