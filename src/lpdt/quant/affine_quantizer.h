#pragma once
// The uniform affine quantizer of gemmlowp / Banner et al. 2018 (paper section 3, reference spec
// 7.1), per node, with round-to-nearest-even or stochastic rounding (docs/quantization.md).
//
//   gemmlowp scheme:  lo = min(min, 0), hi = max(max, 0)
//                     scale = max((hi - lo) / qmax, 1e-8),  zero_point = round(-lo / scale)
//                     q = round(clamp(x / scale + zero_point [+ u], 0, qmax)),  u ~ U[-1/2, 1/2)
//                     real = scale * (q - zero_point)
//   reference scheme: scale = max((max - min) / qmax, 1e-8)
//                     q = round(clamp((x - min) / scale [+ u], 0, qmax)),  real = q * scale + min
//
// qmax = 2^bits - 1; round() is round-half-to-even, as torch.round.
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "lpdt/quant/affine_params.h"
#include "lpdt/quant/node_view.h"
#include "lpdt/quant/quant_options.h"
#include "lpdt/quant/stochastic_draws.h"

namespace lpdt::quant {

// Each node's range: min and max, each [k] float32.
struct NodeRange {
  at::Tensor min;
  at::Tensor max;
};

// min/max over each node's whole tensor (weights, gradients: "per-tensor" in the reference).
// x: any layout accepted by canonical_layout, k nodes.
NodeRange tensor_range(const at::Tensor& x, std::int64_t k);
// Mean over samples of each sample's min/max (the reference's QuantMeasure in training).
NodeRange sample_mean_range(const at::Tensor& x, std::int64_t k);
// sample_mean_range, and each node's running range moved toward it (the reference's QuantMeasure):
// running = running * (1 - momentum) + momentum * range, as running.mul_(1 - momentum)
// .add_(range, momentum) computes it. running_min, running_max: k float32 values on x's device,
// updated in place (callers hold a NoGradGuard when they are parameters). On CUDA one kernel does
// both; elsewhere the range, then the two tensor operations.
NodeRange sample_mean_range_updating(const at::Tensor& x, std::int64_t k,
                                     const at::Tensor& running_min, const at::Tensor& running_max,
                                     double momentum);

// Each tensor ([k, ...] float32, each node's values one dense block: stride(0) = numel / k, in
// any order within it, e.g. a convolution weight stored channels-last) fake-quantized alone with
// each node's min and max and round-to-nearest: the values fake_quantize(t, k, tensor_range(t, k),
// {bits, scheme, nearest}) gives, in t's strides. On CUDA one kernel for all of them (per 64).
std::vector<at::Tensor> fake_quantize_each_nearest(const std::vector<at::Tensor>& tensors,
                                                   std::int64_t k, int bits, QuantScheme scheme);

struct QuantizeRequest {
  int bits = 8;
  QuantScheme scheme = QuantScheme::kGemmlowp;
  Rounding rounding = Rounding::kNearest;
  DrawKey key;      // stochastic rounding: whose draws
  SiteId site = 0;  // stochastic rounding: which site
};

// Quantize-dequantize: the simulated backend. x: see canonical_layout; returns float32 in x's
// canonical layout, same shape. No autograd (see fake_quant_ops.h).
at::Tensor fake_quantize(const at::Tensor& x, std::int64_t k, const NodeRange& range,
                         const QuantizeRequest& request);

// 8-bit codes and their parameters: the integer backend's input. codes: uint8, x's shape in its
// canonical layout; scale, zero_point: [k] float32 (real = scale * (codes - zero_point)).
struct QuantizedTensor {
  at::Tensor codes;
  at::Tensor scale;
  at::Tensor zero_point;
};
// Same rounding decisions as fake_quantize (tested): dequantize(quantize(x)) == fake_quantize(x).
QuantizedTensor quantize(const at::Tensor& x, std::int64_t k, const NodeRange& range,
                         const QuantizeRequest& request);
// codes -> float32 (same layout): scale * (codes - zero_point) per node.
at::Tensor dequantize(const QuantizedTensor& q, std::int64_t k);

// A tensor's fake quantization applied one sample at a time, into a caller's buffer: for kernels
// that consume a quantized tensor sample by sample and so need not write it whole (the fused
// Range EvoNorm quantizes its output gradient this way). The values of fake_quantize, element for
// element (same ranges, draws and rounding).
class SampleQuantizer {
 public:
  // v: the tensor's NodeView (canonical layout, all k nodes); range: [k] per node.
  SampleQuantizer(const NodeView& v, const NodeRange& range, const QuantizeRequest& request);
  // x and out point at the sample's first element (node 0, row 0); both have v's strides, and
  // every node's part of the sample is written.
  void fake_quantize_sample(const float* x, float* out, std::int64_t sample) const;

 private:
  NodeView view_;
  std::vector<AffineParams> params_;
  std::vector<std::uint64_t> streams_;  // per node; stochastic rounding only
  float qmax_;
  bool stochastic_;
};

// Sample `sample` of every node of q as floats, scale * (codes - zero_point): out points at the
// sample's first element and has the codes' strides (v = node_view(q.codes, k)). The values of
// dequantize, element for element.
void dequantize_sample(const QuantizedTensor& q, const NodeView& v, std::int64_t sample,
                       float* out);

}  // namespace lpdt::quant
