#pragma once
// The affine quantizer's CUDA kernels (affine_quantizer.h gives the formulas): each quantization is
// one pass over the tensor, the node's parameters and stochastic-rounding draws computed in the
// kernel from the same host-device code as the CPU loops (affine_params.h, stochastic_draws.h),
// so the two devices decide bit for bit alike (tests/quant/affine_quantizer_cuda_test.cpp). The
// device-generic tensor-operation version (affine_quantizer_tensor_ops.h) ran about twenty
// element-wise passes, several of them over 64-bit integers, per quantization.
//
// Plain C++ (no LibTorch): affine_quantizer_cuda.cpp passes device pointers and the current
// stream. Geometry is NodeView's (node_view.h): element (node n, sample s, row r, col c) of a
// tensor is at n * node_stride + s * sample_stride + r * row_stride + c, and its draw index is its
// position s * rows * cols + r * cols + c in the node's own order. Every pointer is on the device.
#include <cstdint>

#include "lpdt/quant/quant_options.h"
#include "lpdt/quant/stochastic_draws.h"

namespace lpdt::quant::cuda_kernels {

struct Geometry {
  std::int64_t nodes = 1, samples = 1, rows = 1, cols = 1;
  std::int64_t node_stride = 0, sample_stride = 0, row_stride = 0;
  std::int64_t node_numel() const { return samples * rows * cols; }
};

struct Request {
  int bits = 8;
  QuantScheme scheme = QuantScheme::kGemmlowp;
  bool stochastic = false;
  DrawKey key;      // stochastic rounding only
  SiteId site = 0;  // stochastic rounding only
};

// Which range of each node: its whole tensor's min and max, or the mean over samples of each
// sample's min and max (affine_quantizer.h, tensor_range and sample_mean_range).
enum class RangeKind { kWholeTensor, kSampleMean };

// A running range to move toward the measured one in the same kernel (the reference's
// QuantMeasure): running = running * keep + take * range, keep = 1 - momentum, take = momentum,
// each node's value at min + node * stride (and max + node * stride). min = nullptr: none.
struct RunningRangeUpdate {
  float* min = nullptr;
  float* max = nullptr;
  std::int64_t stride = 1;
  float keep = 1.0f, take = 0.0f;
};

// Floats of scratch space node_ranges needs: two per (node, chunk).
std::int64_t node_ranges_scratch(const Geometry& g, RangeKind kind);

// x: the tensor (Geometry g, not empty); scratch: node_ranges_scratch(g, kind) floats; min_out,
// max_out: [nodes] float32. NaNs are skipped, as the CPU loops skip them. One kernel: each node's
// chunks, then the node's last block to finish combines them (and updates `running`). Range
// computations on one device must not run concurrently (they share per-node block counters).
void node_ranges(const float* x, const Geometry& g, RangeKind kind, float* scratch, float* min_out,
                 float* max_out, const RunningRangeUpdate& running, void* stream);

// out (g, same strides as x) = dequantize(round(clamp(quantize(x) [+ draw], 0, qmax))) with each
// node's parameters from range_min/range_max ([nodes] float32).
void fake_quantize(const float* x, float* out, const Geometry& g, const float* range_min,
                   const float* range_max, const Request& request, void* stream);

// The same decisions as 8-bit codes (gemmlowp scheme, bits <= 8; checked by the caller), and each
// node's scale and zero point into scale_out, zero_point_out ([nodes] float32).
void quantize_codes(const float* x, std::uint8_t* codes, float* scale_out, float* zero_point_out,
                    const Geometry& g, const float* range_min, const float* range_max,
                    const Request& request, void* stream);

// out = (codes - zero_point) * scale per node; codes and out share the geometry g.
void dequantize(const std::uint8_t* codes, float* out, const Geometry& g, const float* scale,
                const float* zero_point, void* stream);

// One tensor segment of `nodes` nodes: node n's numel values at in + n * node_stride, its
// fake-quantized values written at out + n * node_stride.
struct SegmentRef {
  const float* in = nullptr;
  float* out = nullptr;
  std::int64_t numel = 0, node_stride = 0;
};

// For every (node, segment): the segment's min and max, then its elements fake-quantized with
// them and round-to-nearest (as node_ranges(kWholeTensor) and fake_quantize of each segment alone
// give them). One block per (segment, node), launches of up to 64 segments: all of a model's
// parameters in one launch or a few.
void fake_quantize_segments_nearest(const SegmentRef* segments, std::int64_t count,
                                    std::int64_t nodes, int bits, QuantScheme scheme, void* stream);

}  // namespace lpdt::quant::cuda_kernels
