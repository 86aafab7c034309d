#pragma once
// A running average moved toward a new measurement, as the reference's QuantMeasure and Range
// BatchNorm move theirs:
//
//   running = running * (1 - momentum) + momentum * value
//
// in the values' type (float32; float64 in tests), each product and the sum rounded on their
// own (no fused multiply-add), element by element. Why not LibTorch's
// running.mul_(1 - m).add_(value, m): its element-wise CPU loops do not round alike at every
// length (their vector part fuses the multiply and the add), so the last bit of a node's running
// value depended on how many nodes shared its pass (3 nodes' running ranges against 1; tested,
// docs/architecture.md, "Reproducibility"). Here every element gets the same arithmetic whatever
// the tensor's length.
//
// It lives in core/ because quant/ (the activation ranges) and nn/ (Range BatchNorm) use it.
#include <ATen/core/Tensor.h>

namespace lpdt {

// running: float32 or float64, updated in place, contiguous or one-dimensional with any stride
// (a column of [k, P] parameters); value: the same type, with running's element count, read in
// running's element order (row-major). On the CPU the loop above; on other devices the two
// tensor operations (their results there are the GPU kernels' own, tested against those in
// quant/).
void move_running_average(const at::Tensor& running, const at::Tensor& value, double momentum);

}  // namespace lpdt
