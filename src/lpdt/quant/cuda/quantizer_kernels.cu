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
#include "lpdt/quant/cuda/line_walk.h"
#include "lpdt/quant/cuda/quantizer_kernels.h"

namespace lpdt::quant::cuda_kernels {
namespace {

constexpr int kThreads = kQuantizerThreads;

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

// Counters of the range kernel's blocks finished per node, zero between launches (the last block
// of a node resets its counter). One range computation at a time per device: lpdt runs all of a
// step's kernels on one stream.
constexpr int kMaxNodes = 65535;
__device__ unsigned int finished_blocks[kMaxNodes];

template <typename Index>
struct RangeArgs {
  LineWalk<Index> walk;
  Index node_stride;
  Index groups, group_lines, per_group, chunk_lines;
  bool sample_mean;
  float* scratch;  // [2, nodes, segments]: each chunk's min, then its max
  float* min_out;
  float* max_out;
  RunningRangeUpdate running;
};

// Chunk blockIdx.x of node blockIdx.y: its min and max into scratch. The last block of a node to
// finish combines the node's chunks (a threadfence-and-counter reduction): the whole tensor's
// extremes, or the mean of the samples' extremes summed in double in sample order, as the CPU
// loops sum them (the same floats); then the running range, when asked for.
template <typename Index>
__global__ void node_ranges_kernel(const float* __restrict__ x, RangeArgs<Index> a) {
  const Index node = blockIdx.y, segment = blockIdx.x, segments = gridDim.x;
  const LineRange<Index> lines = chunk_lines(segment, a.per_group, a.group_lines, a.chunk_lines);
  const float* node_x = x + node * a.node_stride;
  float lo = INFINITY, hi = -INFINITY;
  for_each_unit(a.walk, lines.begin, lines.end, Index{0}, Index{1}, static_cast<Index>(threadIdx.x),
                [&](Index line, Index col) {
                  const float v = node_x[line * a.walk.row_stride + col];
                  lo = lower(v, lo);
                  hi = higher(v, hi);
                });
  block_extremes(lo, hi);
  float* mins = a.scratch + node * segments;
  float* maxs = a.scratch + (gridDim.y + node) * segments;
  __shared__ bool last;
  if (threadIdx.x == 0) {
    mins[segment] = lo;
    maxs[segment] = hi;
    __threadfence();  // the extremes are visible before the count says so
    last = atomicAdd(&finished_blocks[node], 1u) == static_cast<unsigned>(segments) - 1u;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  float node_lo, node_hi;
  if (!a.sample_mean) {
    lo = INFINITY;
    hi = -INFINITY;
    for (Index s = threadIdx.x; s < segments; s += kThreads) {
      lo = lower(__ldcg(mins + s), lo);
      hi = higher(__ldcg(maxs + s), hi);
    }
    block_extremes(lo, hi);
    node_lo = lo;
    node_hi = hi;
  } else {
    // Each sample's extremes over its chunks, into the sample's first chunk's slot.
    for (Index g = threadIdx.x; g < a.groups; g += kThreads) {
      float g_lo = INFINITY, g_hi = -INFINITY;
      for (Index c = 0; c < a.per_group; ++c) {
        g_lo = lower(__ldcg(mins + g * a.per_group + c), g_lo);
        g_hi = higher(__ldcg(maxs + g * a.per_group + c), g_hi);
      }
      mins[g * a.per_group] = g_lo;
      maxs[g * a.per_group] = g_hi;
    }
    __syncthreads();
    double sum_lo = 0.0, sum_hi = 0.0;
    if (threadIdx.x == 0) {
      for (Index g = 0; g < a.groups; ++g) {
        sum_lo += mins[g * a.per_group];
        sum_hi += maxs[g * a.per_group];
      }
    }
    node_lo = static_cast<float>(sum_lo / static_cast<double>(a.groups));
    node_hi = static_cast<float>(sum_hi / static_cast<double>(a.groups));
  }
  if (threadIdx.x == 0) {
    a.min_out[node] = node_lo;
    a.max_out[node] = node_hi;
    if (a.running.min != nullptr) {
      // As ATen runs running.mul_(1 - m).add_(range, m): a float product, then one fused
      // multiply-add (its add with alpha).
      float* run_lo = a.running.min + node * a.running.stride;
      float* run_hi = a.running.max + node * a.running.stride;
      *run_lo = __fmaf_rn(a.running.take, node_lo, __fmul_rn(*run_lo, a.running.keep));
      *run_hi = __fmaf_rn(a.running.take, node_hi, __fmul_rn(*run_hi, a.running.keep));
    }
    finished_blocks[node] = 0u;
  }
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

// The node's affine parameters and draw stream, as every quantize kernel's blocks begin.
struct NodeQuantizer {
  AffineParams p;
  std::uint64_t stream;
  float qmax;
};
__device__ NodeQuantizer node_quantizer(unsigned node, const float* range_min,
                                        const float* range_max, const Request& request,
                                        float* scale_out, float* zero_point_out) {
  NodeQuantizer q;
  q.p = affine_params(range_min[node], range_max[node], request.bits, request.scheme);
  if (scale_out != nullptr && blockIdx.x == 0 && threadIdx.x == 0) {
    scale_out[node] = q.p.scale;
    zero_point_out[node] = q.p.zero_point;
  }
  DrawKey key = request.key;
  if (request.stochastic && key.device_step != nullptr) key.step = *key.device_step;
  q.stream =
      request.stochastic ? draw_stream(key, static_cast<std::int64_t>(node), request.site) : 0;
  q.qmax = static_cast<float>((std::int64_t{1} << request.bits) - 1);
  return q;
}

// The two draws of pair `pair` (elements 2 * pair and 2 * pair + 1 share one hash).
__device__ float2 pair_draws(const NodeQuantizer& q, bool stochastic, std::uint64_t pair) {
  if (!stochastic) return make_float2(0.0f, 0.0f);
  const std::uint64_t h = pair_hash(q.stream, pair);
  return make_float2(draw_of_half(static_cast<std::uint32_t>(h)),
                     draw_of_half(static_cast<std::uint32_t>(h >> 32)));
}

// Any geometry: node blockIdx.y; each thread takes pairs of elements (2p, 2p + 1) of the node's
// order, which may straddle two lines when cols is odd. Writes codes (Out = uint8) or dequantized
// values (Out = float).
template <typename Index, typename Out>
__global__ void quantize_kernel(const float* __restrict__ x, Out* __restrict__ out,
                                Addressing<Index> a, Index node_numel,
                                const float* __restrict__ range_min,
                                const float* __restrict__ range_max, Request request,
                                float* scale_out, float* zero_point_out) {
  const Index node = blockIdx.y;
  const NodeQuantizer q =
      node_quantizer(blockIdx.y, range_min, range_max, request, scale_out, zero_point_out);
  const Index pairs = (node_numel + 1) / 2;
  for (Index pair = blockIdx.x * kThreads + threadIdx.x; pair < pairs;
       pair += gridDim.x * kThreads) {
    const float2 d = pair_draws(q, request.stochastic, pair);
    const float draws[2] = {d.x, d.y};
    for (int half = 0; half < 2; ++half) {
      const Index e = 2 * pair + half;
      if (e >= node_numel) break;
      const Index at = a.offset(node, e);
      const float c = code_of(x[at], q.p, q.qmax, request.stochastic, draws[half]);
      if constexpr (sizeof(Out) == 1) {
        out[at] = static_cast<Out>(c);
      } else {
        out[at] = q.p.dequantize(c);
      }
    }
  }
}

// Lines of an even number of columns, pairs 8-byte aligned: node blockIdx.y; a thread takes pair
// `unit` of a line (one float2 load and store), the pair's index in the node's order being
// line * units + unit.
template <typename Index, typename Out>
__global__ void quantize_pairs_kernel(const float* __restrict__ x, Out* __restrict__ out,
                                      LineWalk<Index> w, Index lines, Index node_stride,
                                      const float* __restrict__ range_min,
                                      const float* __restrict__ range_max, Request request,
                                      float* scale_out, float* zero_point_out) {
  const NodeQuantizer q =
      node_quantizer(blockIdx.y, range_min, range_max, request, scale_out, zero_point_out);
  const Index node_offset = static_cast<Index>(blockIdx.y) * node_stride;
  for_each_unit(w, Index{0}, lines, static_cast<Index>(blockIdx.x), static_cast<Index>(gridDim.x),
                static_cast<Index>(threadIdx.x), [&](Index line, Index unit) {
                  const Index at = node_offset + line * w.row_stride + 2 * unit;
                  const float2 v = *reinterpret_cast<const float2*>(x + at);
                  const float2 d = pair_draws(q, request.stochastic, line * w.units + unit);
                  const float c0 = code_of(v.x, q.p, q.qmax, request.stochastic, d.x);
                  const float c1 = code_of(v.y, q.p, q.qmax, request.stochastic, d.y);
                  if constexpr (sizeof(Out) == 1) {
                    *reinterpret_cast<uchar2*>(out + at) =
                        make_uchar2(static_cast<unsigned char>(c0), static_cast<unsigned char>(c1));
                  } else {
                    *reinterpret_cast<float2*>(out + at) =
                        make_float2(q.p.dequantize(c0), q.p.dequantize(c1));
                  }
                });
}

template <typename Index>
__global__ void dequantize_kernel(const std::uint8_t* __restrict__ codes, float* __restrict__ out,
                                  LineWalk<Index> w, Index lines, Index node_stride,
                                  const float* __restrict__ scale,
                                  const float* __restrict__ zero_point) {
  const float s = scale[blockIdx.y], z = zero_point[blockIdx.y];
  const Index node_offset = static_cast<Index>(blockIdx.y) * node_stride;
  for_each_unit(w, Index{0}, lines, static_cast<Index>(blockIdx.x), static_cast<Index>(gridDim.x),
                static_cast<Index>(threadIdx.x), [&](Index line, Index col) {
                  const Index at = node_offset + line * w.row_stride + col;
                  out[at] = (static_cast<float>(codes[at]) - z) * s;
                });
}

constexpr int kSegmentsPerLaunch = 64;
struct SegmentTable {
  SegmentRef segment[kSegmentsPerLaunch];
};

// Segment blockIdx.x of node blockIdx.y: its extremes, then its elements fake-quantized with them
// (the second read mostly from L2).
__global__ void segments_nearest_kernel(SegmentTable table, int bits, QuantScheme scheme) {
  const SegmentRef& s = table.segment[blockIdx.x];
  const float* __restrict__ in = s.in + blockIdx.y * s.node_stride;
  float* __restrict__ out = s.out + blockIdx.y * s.node_stride;
  float lo = INFINITY, hi = -INFINITY;
  for (std::int64_t i = threadIdx.x; i < s.numel; i += kThreads) {
    const float v = in[i];
    lo = lower(v, lo);
    hi = higher(v, hi);
  }
  block_extremes(lo, hi);
  const AffineParams p = affine_params(lo, hi, bits, scheme);
  const float qmax = static_cast<float>((std::int64_t{1} << bits) - 1);
  for (std::int64_t i = threadIdx.x; i < s.numel; i += kThreads) {
    out[i] = p.dequantize(code_of(in[i], p, qmax, false, 0.0f));
  }
}

// Lines per node, after checking the line form (see LineWalk) holds.
std::int64_t lines_of(const Geometry& g) {
  if (g.sample_stride != g.rows * g.row_stride) {
    throw std::invalid_argument("CUDA quantizer: a geometry whose samples are not whole lines (" +
                                std::to_string(g.sample_stride) + " elements between samples, " +
                                std::to_string(g.rows) + " rows of stride " +
                                std::to_string(g.row_stride) + "); expected a NodeView's layout");
  }
  return g.samples * g.rows;
}

// Blocks per node of a line walk over `lines` lines: no more than the walk has passes.
unsigned line_blocks_per_node(const Geometry& g, std::int64_t lines, std::int64_t units) {
  const std::int64_t per_pass = units <= kThreads ? kThreads / units : 1;
  const std::int64_t passes = (lines + per_pass - 1) / per_pass;
  const unsigned cap = element_blocks_per_node(lines * units, g.nodes);
  return static_cast<unsigned>(std::clamp<std::int64_t>(passes, 1, cap));
}

bool aligned_8(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 8 == 0; }

template <typename Out>
void launch_quantize(const float* x, Out* out, const Geometry& g, const float* range_min,
                     const float* range_max, const Request& request, float* scale_out,
                     float* zero_point_out, void* stream) {
  check_nodes(g);
  if (g.node_numel() == 0) return;
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  const std::int64_t lines = lines_of(g);
  // Pairs lie within lines and load as float2 when cols, the strides and the pointers are even.
  const bool pairs_in_lines =
      g.cols % 2 == 0 && g.row_stride % 2 == 0 && g.node_stride % 2 == 0 && aligned_8(x) &&
      (sizeof(Out) == 1 ? reinterpret_cast<std::uintptr_t>(out) % 2 == 0 : aligned_8(out));
  with_index_type(g, [&]<typename Index>() {
    if (pairs_in_lines) {
      const std::int64_t units = g.cols / 2;
      const dim3 grid(line_blocks_per_node(g, lines, units), static_cast<unsigned>(g.nodes));
      quantize_pairs_kernel<Index, Out><<<grid, kThreads, 0, cuda_stream>>>(
          x, out, line_walk<Index>(g, units), static_cast<Index>(lines),
          static_cast<Index>(g.node_stride), range_min, range_max, request, scale_out,
          zero_point_out);
    } else {
      const dim3 grid(element_blocks_per_node((g.node_numel() + 1) / 2, g.nodes),
                      static_cast<unsigned>(g.nodes));
      quantize_kernel<Index, Out><<<grid, kThreads, 0, cuda_stream>>>(
          x, out, addressing<Index>(g), static_cast<Index>(g.node_numel()), range_min, range_max,
          request, scale_out, zero_point_out);
    }
  });
  check_launch("quantize");
}

}  // namespace

std::int64_t node_ranges_scratch(const Geometry& g, RangeKind kind) {
  return 2 * g.nodes * chunks_of(g, kind).segments();
}

void node_ranges(const float* x, const Geometry& g, RangeKind kind, float* scratch, float* min_out,
                 float* max_out, const RunningRangeUpdate& running, void* stream) {
  check_nodes(g);
  const std::int64_t lines = lines_of(g);
  const Chunks chunks = chunks_of(g, kind);
  if (lines == 0 || g.cols == 0 || chunks.segments() == 0) {
    throw std::invalid_argument("CUDA quantizer: the range of an empty tensor");
  }
  const dim3 grid(static_cast<unsigned>(chunks.segments()), static_cast<unsigned>(g.nodes));
  with_index_type(g, [&]<typename Index>() {
    const RangeArgs<Index> args{line_walk<Index>(g, g.cols),
                                static_cast<Index>(g.node_stride),
                                static_cast<Index>(chunks.groups),
                                static_cast<Index>(chunks.group_lines),
                                static_cast<Index>(chunks.per_group),
                                static_cast<Index>(chunks.chunk_lines),
                                kind == RangeKind::kSampleMean,
                                scratch,
                                min_out,
                                max_out,
                                running};
    node_ranges_kernel<Index><<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, args);
  });
  check_launch("node_ranges");
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
  const std::int64_t lines = lines_of(g);
  const dim3 grid(line_blocks_per_node(g, lines, g.cols), static_cast<unsigned>(g.nodes));
  with_index_type(g, [&]<typename Index>() {
    dequantize_kernel<Index><<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        codes, out, line_walk<Index>(g, g.cols), static_cast<Index>(lines),
        static_cast<Index>(g.node_stride), scale, zero_point);
  });
  check_launch("dequantize");
}

void fake_quantize_segments_nearest(const SegmentRef* segments, std::int64_t count,
                                    std::int64_t nodes, int bits, QuantScheme scheme,
                                    void* stream) {
  if (nodes < 1 || nodes > 65535) {
    throw std::invalid_argument("CUDA quantizer: " + std::to_string(nodes) +
                                " nodes in one tensor; expected 1 to 65535");
  }
  for (std::int64_t first = 0; first < count; first += kSegmentsPerLaunch) {
    SegmentTable table{};
    unsigned used = 0;
    for (std::int64_t s = first; s < count && s < first + kSegmentsPerLaunch; ++s) {
      if (segments[s].numel > 0) table.segment[used++] = segments[s];
    }
    if (used == 0) continue;
    const dim3 grid(used, static_cast<unsigned>(nodes));
    segments_nearest_kernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(table, bits,
                                                                                      scheme);
    check_launch("segments_nearest");
  }
}

}  // namespace lpdt::quant::cuda_kernels
