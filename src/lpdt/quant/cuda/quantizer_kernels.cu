// The affine quantizer's CUDA kernels (quantizer_kernels.h). Compiled with --fmad=false: the CPU
// loops are built without fused multiply-adds (-ffp-contract=off), and q * scale + min must round
// twice on both devices to give the same floats.
#include <cuda_runtime.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "lpdt/core/cuda/launch_check.h"
#include "lpdt/quant/affine_params.h"
#include "lpdt/quant/cuda/quantizer_kernels.h"

namespace lpdt::quant::cuda_kernels {
namespace {

constexpr int kThreads = 256;

void check_launch(const char* kernel) {
  lpdt::cuda_kernels::check_launch(std::string("CUDA quantizer kernel ") + kernel);
}

// Element e of node n's [samples, rows, cols] order -> its offset. Index is 32-bit when every
// offset fits (divisions by run-time values cost several times more in 64 bits).
template <typename Index>
struct Addressing {
  Index rows, cols, row_stride, sample_stride, node_stride;
  __device__ Index offset(Index node, Index e) const {
    const Index run = e / cols;  // sample * rows + row
    const Index col = e - run * cols;
    const Index sample = run / rows;
    const Index row = run - sample * rows;
    return node * node_stride + sample * sample_stride + row * row_stride + col;
  }
};

template <typename Index>
Addressing<Index> addressing(const Geometry& g) {
  return Addressing<Index>{static_cast<Index>(g.rows), static_cast<Index>(g.cols),
                           static_cast<Index>(g.row_stride), static_cast<Index>(g.sample_stride),
                           static_cast<Index>(g.node_stride)};
}

// Whether every offset and node-local index of g fits in 31 bits.
bool fits_32_bits(const Geometry& g) {
  constexpr std::int64_t kLimit = std::int64_t{1} << 31;
  const std::int64_t last = (g.nodes - 1) * g.node_stride + (g.samples - 1) * g.sample_stride +
                            (g.rows - 1) * g.row_stride + g.cols;
  return last < kLimit && g.node_numel() < kLimit;
}

// Runs launch.template operator()<Index>() with the narrowest index type g allows.
template <typename Launch>
void with_index_type(const Geometry& g, Launch&& launch) {
  if (fits_32_bits(g)) {
    launch.template operator()<std::uint32_t>();
  } else {
    launch.template operator()<std::uint64_t>();
  }
}

void check_nodes(const Geometry& g) {
  if (g.nodes < 1 || g.nodes > 65535) {
    throw std::invalid_argument("CUDA quantizer: " + std::to_string(g.nodes) +
                                " nodes in one tensor; expected 1 to 65535");
  }
}

unsigned blocks_for(std::int64_t items) {
  const std::int64_t blocks = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 8192 ? 8192 : blocks));
}

// Blocks per node of the element-wise kernels (grid-stride loops): about two waves of the GPU over
// all nodes, not one thread per element. Each block first loads its node's range or scale and
// derives the node's draw stream (a chain of dependent loads and 64-bit mixes); with one or two
// elements per thread that chain, not memory, set the time: 67 us for a 16-node ResNet-20
// activation (67 MB moved, 1 TB/s) on an H200 (docs/benchmarks.md, GPU, item 9).
unsigned element_blocks_per_node(std::int64_t items, std::int64_t nodes) {
  static const std::int64_t resident_blocks = [] {
    int device = 0, multiprocessors = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device) !=
            cudaSuccess) {
      multiprocessors = 132;  // an H100's; only the grid's size depends on it, not a value
    }
    return std::int64_t{multiprocessors} * (2048 / kThreads);
  }();
  const std::int64_t cap = std::max<std::int64_t>(1, 2 * resident_blocks / nodes);
  return static_cast<unsigned>(std::min<std::int64_t>(blocks_for(items), cap));
}

// The CPU loops' comparisons (block_min_max): a NaN never replaces a bound.
__device__ float lower(float v, float lo) { return v < lo ? v : lo; }
__device__ float higher(float v, float hi) { return v > hi ? v : hi; }

// Block-wide min and max; every thread gets the result.
__device__ void block_extremes(float& lo, float& hi) {
  __shared__ float los[kThreads / 32], his[kThreads / 32];
  for (int shift = 16; shift > 0; shift /= 2) {
    lo = lower(__shfl_down_sync(0xffffffffu, lo, shift), lo);
    hi = higher(__shfl_down_sync(0xffffffffu, hi, shift), hi);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    los[warp] = lo;
    his[warp] = hi;
  }
  __syncthreads();
  lo = los[0];
  hi = his[0];
  for (int w = 1; w < kThreads / 32; ++w) {
    lo = lower(los[w], lo);
    hi = higher(his[w], hi);
  }
}

// Segment blockIdx.x of node blockIdx.y: elements [segment * length, (segment + 1) * length) of
// the node's order. Writes the segment's min and max to scratch[node * segments + segment] and
// scratch[(nodes + node) * segments + segment].
template <typename Index>
__global__ void segment_extremes_kernel(const float* __restrict__ x, Addressing<Index> a,
                                        Index node_numel, Index length,
                                        float* __restrict__ scratch) {
  const Index node = blockIdx.y, segment = blockIdx.x;
  const Index begin = segment * length;
  const Index end = begin + length < node_numel ? begin + length : node_numel;
  float lo = INFINITY, hi = -INFINITY;
  for (Index e = begin + threadIdx.x; e < end; e += kThreads) {
    const float v = x[a.offset(node, e)];
    lo = lower(v, lo);
    hi = higher(v, hi);
  }
  block_extremes(lo, hi);
  if (threadIdx.x == 0) {
    scratch[node * gridDim.x + segment] = lo;
    scratch[(gridDim.y + node) * gridDim.x + segment] = hi;
  }
}

// One thread per node: the whole tensor's extremes, or the mean of the samples' extremes summed in
// double in sample order (as the CPU loops sum them: the same floats).
__global__ void combine_segments_kernel(const float* __restrict__ scratch, int nodes, int segments,
                                        bool sample_mean, float* min_out, float* max_out) {
  const int node = blockIdx.x * blockDim.x + threadIdx.x;
  if (node >= nodes) return;
  const float* mins = scratch + static_cast<std::int64_t>(node) * segments;
  const float* maxs = scratch + static_cast<std::int64_t>(nodes + node) * segments;
  if (sample_mean) {
    double lo = 0.0, hi = 0.0;
    for (int s = 0; s < segments; ++s) {
      lo += mins[s];
      hi += maxs[s];
    }
    min_out[node] = static_cast<float>(lo / static_cast<double>(segments));
    max_out[node] = static_cast<float>(hi / static_cast<double>(segments));
    return;
  }
  float lo = INFINITY, hi = -INFINITY;
  for (int s = 0; s < segments; ++s) {
    lo = lower(mins[s], lo);
    hi = higher(maxs[s], hi);
  }
  min_out[node] = lo;
  max_out[node] = hi;
}

// How node_ranges splits each node: one segment per sample, or segments of about 8,192 elements
// (at most 1,024 per node) for the whole tensor.
struct Segments {
  std::int64_t count, length;
};
Segments segments_of(const Geometry& g, RangeKind kind) {
  if (kind == RangeKind::kSampleMean) return {g.samples, g.rows * g.cols};
  const std::int64_t numel = g.node_numel();
  std::int64_t count = (numel + 8191) / 8192;
  count = count < 1 ? 1 : (count > 1024 ? 1024 : count);
  return {count, (numel + count - 1) / count};
}

// One element's code before the conversion to the output type: the CPU loops' expression
// (fake_quantize_block), with std::max(y, 0) and std::min(y, qmax) written out.
__device__ float code_of(float x, const AffineParams& p, float qmax, bool stochastic, float draw) {
  float y = p.quantize(x);
  if (stochastic) y += draw;
  y = y < 0.0f ? 0.0f : y;
  y = qmax < y ? qmax : y;
  return round_half_even(y);
}

// Node blockIdx.y; each thread takes pairs of elements (2p, 2p + 1), which share one hash.
// Writes codes (Out = uint8) or dequantized values (Out = float).
template <typename Index, typename Out>
__global__ void quantize_kernel(const float* __restrict__ x, Out* __restrict__ out,
                                Addressing<Index> a, Index node_numel,
                                const float* __restrict__ range_min,
                                const float* __restrict__ range_max, Request request,
                                float* scale_out, float* zero_point_out) {
  const Index node = blockIdx.y;
  const AffineParams p =
      affine_params(range_min[node], range_max[node], request.bits, request.scheme);
  if (scale_out != nullptr && blockIdx.x == 0 && threadIdx.x == 0) {
    scale_out[node] = p.scale;
    zero_point_out[node] = p.zero_point;
  }
  DrawKey key = request.key;
  if (request.stochastic && key.device_step != nullptr) key.step = *key.device_step;
  const std::uint64_t stream =
      request.stochastic ? draw_stream(key, static_cast<std::int64_t>(node), request.site) : 0;
  const float qmax = static_cast<float>((std::int64_t{1} << request.bits) - 1);
  const Index pairs = (node_numel + 1) / 2;
  for (Index pair = blockIdx.x * kThreads + threadIdx.x; pair < pairs;
       pair += gridDim.x * kThreads) {
    float draws[2] = {0.0f, 0.0f};
    if (request.stochastic) {
      const std::uint64_t h = pair_hash(stream, pair);
      draws[0] = draw_of_half(static_cast<std::uint32_t>(h));
      draws[1] = draw_of_half(static_cast<std::uint32_t>(h >> 32));
    }
    for (int half = 0; half < 2; ++half) {
      const Index e = 2 * pair + half;
      if (e >= node_numel) break;
      const Index at = a.offset(node, e);
      const float q = code_of(x[at], p, qmax, request.stochastic, draws[half]);
      if constexpr (sizeof(Out) == 1) {
        out[at] = static_cast<Out>(q);
      } else {
        out[at] = p.dequantize(q);
      }
    }
  }
}

template <typename Index>
__global__ void dequantize_kernel(const std::uint8_t* __restrict__ codes, float* __restrict__ out,
                                  Addressing<Index> a, Index node_numel,
                                  const float* __restrict__ scale,
                                  const float* __restrict__ zero_point) {
  const Index node = blockIdx.y;
  const float s = scale[node], z = zero_point[node];
  for (Index e = blockIdx.x * kThreads + threadIdx.x; e < node_numel; e += gridDim.x * kThreads) {
    const Index at = a.offset(node, e);
    out[at] = (static_cast<float>(codes[at]) - z) * s;
  }
}

template <typename Out>
void launch_quantize(const float* x, Out* out, const Geometry& g, const float* range_min,
                     const float* range_max, const Request& request, float* scale_out,
                     float* zero_point_out, void* stream) {
  check_nodes(g);
  if (g.node_numel() == 0) return;
  const dim3 grid(element_blocks_per_node((g.node_numel() + 1) / 2, g.nodes),
                  static_cast<unsigned>(g.nodes));
  with_index_type(g, [&]<typename Index>() {
    quantize_kernel<Index, Out><<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        x, out, addressing<Index>(g), static_cast<Index>(g.node_numel()), range_min, range_max,
        request, scale_out, zero_point_out);
  });
  check_launch("quantize");
}

}  // namespace

std::int64_t node_ranges_scratch(const Geometry& g, RangeKind kind) {
  return 2 * g.nodes * segments_of(g, kind).count;
}

void node_ranges(const float* x, const Geometry& g, RangeKind kind, float* scratch, float* min_out,
                 float* max_out, void* stream) {
  check_nodes(g);
  const Segments segments = segments_of(g, kind);
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  if (segments.count > 0) {
    const dim3 grid(static_cast<unsigned>(segments.count), static_cast<unsigned>(g.nodes));
    with_index_type(g, [&]<typename Index>() {
      segment_extremes_kernel<Index><<<grid, kThreads, 0, cuda_stream>>>(
          x, addressing<Index>(g), static_cast<Index>(g.node_numel()),
          static_cast<Index>(segments.length), scratch);
    });
    check_launch("segment_extremes");
  }
  const int nodes = static_cast<int>(g.nodes);
  combine_segments_kernel<<<(nodes + kThreads - 1) / kThreads, kThreads, 0, cuda_stream>>>(
      scratch, nodes, static_cast<int>(segments.count), kind == RangeKind::kSampleMean, min_out,
      max_out);
  check_launch("combine_segments");
}

void fake_quantize(const float* x, float* out, const Geometry& g, const float* range_min,
                   const float* range_max, const Request& request, void* stream) {
  launch_quantize<float>(x, out, g, range_min, range_max, request, nullptr, nullptr, stream);
}

void quantize_codes(const float* x, std::uint8_t* codes, float* scale_out, float* zero_point_out,
                    const Geometry& g, const float* range_min, const float* range_max,
                    const Request& request, void* stream) {
  launch_quantize<std::uint8_t>(x, codes, g, range_min, range_max, request, scale_out,
                                zero_point_out, stream);
}

void dequantize(const std::uint8_t* codes, float* out, const Geometry& g, const float* scale,
                const float* zero_point, void* stream) {
  check_nodes(g);
  if (g.node_numel() == 0) return;
  const dim3 grid(element_blocks_per_node(g.node_numel(), g.nodes),
                  static_cast<unsigned>(g.nodes));
  with_index_type(g, [&]<typename Index>() {
    dequantize_kernel<Index><<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        codes, out, addressing<Index>(g), static_cast<Index>(g.node_numel()), scale, zero_point);
  });
  check_launch("dequantize");
}

}  // namespace lpdt::quant::cuda_kernels
