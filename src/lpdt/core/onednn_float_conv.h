#pragma once
// Float32 (and bfloat16) convolutions run by oneDNN's primitives directly: the forward, backward-data and
// backward-weights primitives of one geometry are made once (per thread and thread count) and
// executed on the caller's tensors, with the weights reordered into each primitive's layout once
// per call. LibTorch 1.13 runs the same oneDNN kernels through its ideep wrappers, which rebuild
// the primitive descriptors (and the backward ones' forward hint) at every call and convert
// tensors around them: at ResNet-20's shapes the direct form ran a training step's convolutions
// 1.01-1.16x faster per shape (not the one-channel stem, left to LibTorch) and made the fp32 step 1.04x
// (one node) to 1.09x (8 nodes) faster (docs/benchmarks.md, "Training throughput", item 13). Where LibTorch takes oneDNN for the same convolution the kernels are the same, so the
// results are too; where it does not (1x1 convolutions of small batches), they agree to float
// rounding.
//
// bfloat16 (model.precision = "bf16", the integer backend's bfloat16 weight gradients): the same
// three primitives on bfloat16 operands and results, products summed in float32 by oneDNN: the
// function LibTorch's bfloat16 convolution computes with the same kernels, without its per-call
// wrapping. Only on CPUs with AVX-512 (oneDNN's bfloat16 convolutions, native with AVX-512 BF16 or
// AMX, emulated on plain AVX-512); elsewhere LibTorch's own bfloat16 path applies.
//
// It lives in core/ because both nn/ (the fp32 convolution layer) and quant/ (the integer
// backend's float weight gradients) use it; it needs nothing of either.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace lpdt {

// Whether this build has oneDNN (Debian's libdnnl, the one LibTorch runs) to call directly.
bool onednn_float_conv_built();

// Whether this CPU runs oneDNN's bfloat16 convolutions in its own kernels (AVX-512 or later),
// not a reference loop.
bool onednn_bf16_conv_fast();

// Whether a convolution of these options on input x runs here: a build with oneDNN, a CPU 4-D
// channels-last input in float32 (or bfloat16 where onednn_bf16_conv_fast) of more than one
// channel (LibTorch runs one-channel stems faster), one group, no bias.
// What the layers decide by; otherwise they call at::conv2d.
bool onednn_float_conv_applies(const at::Tensor& x, std::int64_t groups, bool bias);

// oneDNN's algorithm for the three primitives. Winograd (F(4x4, 3x3), oneDNN's
// `jit_wino_4x3`) computes the same convolution with fewer multiplications, for float32 3x3
// stride-1 kernels on AVX-512 CPUs only, and rounds differently (its transforms scale partial
// sums: about 1e-6 of the result's largest magnitude, against 1e-7 for direct); it reads and
// writes oneDNN's blocked layouts, so the calls below reorder the channels-last activations into
// and out of them. `lpdt bench --conv-forms` times it against the direct algorithm per shape
// (docs/benchmarks.md, "Training throughput", item 15). The layers take kDirect: Winograd ran
// ResNet-20's 64-channel layers 1.14-1.27x faster alone, but the fp32 step no faster (0.99-1.02x,
// medians of alternating builds), and it would change the step's rounding for nothing.
enum class OnednnConvAlgorithm { kDirect, kWinograd };

// Whether oneDNN has a Winograd implementation of this convolution here: float32, a build with
// oneDNN, and a primitive oneDNN makes for it (3x3, stride 1, an AVX-512 CPU).
bool onednn_winograd_available(at::IntArrayRef input_sizes, at::IntArrayRef weight_sizes,
                               std::int64_t stride, std::int64_t padding);

// In the three functions the operands' type T is float32 or bfloat16: the input's type (x; the
// output gradient's for the input gradient). The other operands are converted to T, results are
// T; bfloat16 products are summed in float32 and rounded to bfloat16 once, at the end.

// Winograd (`algorithm`) needs float32 operands where onednn_winograd_available.
// y = conv(x, w). x: [b, in, H, W] T channels-last; weight: [out, in, kh, kw] float32 or
// bfloat16 (any layout) -> [b, out, Ho, Wo] T channels-last, Ho = (H + 2 padding - kh) / stride + 1.
at::Tensor onednn_conv2d_forward(const at::Tensor& x, const at::Tensor& weight,
                                 std::int64_t stride, std::int64_t padding,
                                 OnednnConvAlgorithm algorithm = OnednnConvAlgorithm::kDirect);

// The input gradient: gy [b, out, Ho, Wo] T (any layout), weight [out, in, kh, kw],
// input_sizes [b, in, H, W] -> [b, in, H, W] T channels-last.
at::Tensor onednn_conv2d_input_grad(const at::Tensor& gy, const at::Tensor& weight,
                                    at::IntArrayRef input_sizes, std::int64_t stride,
                                    std::int64_t padding,
                                    OnednnConvAlgorithm algorithm = OnednnConvAlgorithm::kDirect);

// The weight gradient: gy [b, out, Ho, Wo] float32 or bfloat16 (any layout), x [b, in, H, W] T
// channels-last, weight_sizes [out, in, kh, kw] -> [out, in, kh, kw] T contiguous.
at::Tensor onednn_conv2d_weight_grad(const at::Tensor& gy, const at::Tensor& x,
                                     at::IntArrayRef weight_sizes, std::int64_t stride,
                                     std::int64_t padding,
                                     OnednnConvAlgorithm algorithm = OnednnConvAlgorithm::kDirect);

}  // namespace lpdt
