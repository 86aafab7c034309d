#pragma once
// The affine quantizer on CUDA tensors through its fused kernels (cuda/quantizer_kernels.h): one
// pass per quantization, the same decisions as the CPU loops bit for bit. affine_quantizer.cpp
// sends CUDA tensors here in builds with the kernels (a CUDA LibTorch and nvcc), and to the
// device-generic tensor operations (affine_quantizer_tensor_ops.h) otherwise.
#include <ATen/ATen.h>

#include "lpdt/quant/affine_quantizer.h"

namespace lpdt::quant::cuda {

// Whether this build has the kernels (a CUDA LibTorch and nvcc).
bool kernels_built();
// Whether this build has the kernels and x is a CUDA tensor they take.
bool handles(const at::Tensor& x);

// Same contracts as the functions of the same names in affine_quantizer.h; CUDA tensors only.
NodeRange tensor_range(const at::Tensor& x, std::int64_t k);
NodeRange sample_mean_range(const at::Tensor& x, std::int64_t k);
// sample_mean_range, and each node's running range moved toward it in the same kernel (the
// running_min/max.mul_(1 - momentum).add_(range, momentum) of the other devices, the same floats).
// running_min, running_max: k float32 values on x's device, node i's at i * stride(0).
NodeRange sample_mean_range_updating(const at::Tensor& x, std::int64_t k,
                                     const at::Tensor& running_min, const at::Tensor& running_max,
                                     double momentum);
at::Tensor fake_quantize(const at::Tensor& x, std::int64_t k, const NodeRange& range,
                         const QuantizeRequest& request);
QuantizedTensor quantize(const at::Tensor& x, std::int64_t k, const NodeRange& range,
                         const QuantizeRequest& request);
at::Tensor dequantize(const QuantizedTensor& q, std::int64_t k);
std::vector<at::Tensor> fake_quantize_each_nearest(const std::vector<at::Tensor>& tensors,
                                                   std::int64_t k, int bits, QuantScheme scheme);

}  // namespace lpdt::quant::cuda
