// Range EvoNorm's CUDA kernels (range_evonorm_kernels.h). Compiled with --fmad=false: the
// statistic and output must round as the CPU kernel does (built with -ffp-contract=off).
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

#include "lpdt/core/cuda/launch_check.h"
#include "lpdt/nn/cuda/range_evonorm_kernels.h"
#include "lpdt/nn/cuda/walk_pixels.h"

namespace lpdt::nn::cuda_kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxChunks = 16;  // as the CPU kernel's lanes (range_chunks picks at most 16)

void check_launch(const char* kernel) {
  lpdt::cuda_kernels::check_launch(std::string("CUDA Range EvoNorm kernel ") + kernel);
}

void check_geometry(const RangeEvoNormGeometry& g) {
  const std::int64_t cg = g.groups > 0 ? g.channels / g.groups : 0;
  if (g.groups < 1 || g.channels % g.groups != 0 || g.chunks < 1 || g.chunks > kMaxChunks ||
      (cg * g.pixels) % g.chunks != 0 || g.samples > 65535 ||
      g.pixels * g.nodes * g.channels >= (std::int64_t{1} << 31)) {
    throw std::invalid_argument(
        "CUDA Range EvoNorm: unsupported geometry (groups must divide the channels, 1 to 16 "
        "chunks dividing a group, at most 65,535 samples, a sample under 2^31 elements)");
  }
}

// One node's input values: x's floats, or its codes dequantized on the fly with the node's scale
// and zero point (quant::dequantize's expression, so the same floats).
template <bool kCodes>
struct NodeInput {
  const float* values;
  const std::uint8_t* codes;
  float zero_point, scale;
  __device__ float operator[](std::int64_t at) const {
    if constexpr (kCodes) {
      return (static_cast<float>(codes[at]) - zero_point) * scale;
    } else {
      return values[at];
    }
  }
};
template <bool kCodes>
__device__ NodeInput<kCodes> node_input(const RangeEvoNormInput& x, std::int64_t node) {
  if constexpr (kCodes) {
    return {nullptr, x.codes, x.zero_point[node], x.scale[node]};
  } else {
    return {x.values, nullptr, 0.0f, 1.0f};
  }
}

// A candidate extreme: its value and its position in the chunk. The first occurrence wins ties,
// as the CPU kernel's in-order scan (torch.max(dim)) picks it.
struct Extreme {
  float value;
  int at;
};
__device__ Extreme higher(Extreme a, Extreme b) {
  return (b.value > a.value || (b.value == a.value && b.at < a.at)) ? b : a;
}
__device__ Extreme lower(Extreme a, Extreme b) {
  return (b.value < a.value || (b.value == a.value && b.at < a.at)) ? b : a;
}
__device__ Extreme shuffle_down(Extreme e, int shift) {
  return {__shfl_down_sync(0xffffffffu, e.value, shift),
          __shfl_down_sync(0xffffffffu, e.at, shift)};
}

// Block (group, node, sample); warp w takes chunks w, w + 8, ...; lane l positions l, l + 32, ...
template <bool kCodes>
__global__ void range_statistic_kernel(RangeEvoNormInput x, RangeEvoNormGeometry geo,
                                       float* __restrict__ scale,
                                       std::int32_t* __restrict__ arg_max,
                                       std::int32_t* __restrict__ arg_min) {
  const int group = blockIdx.x, node = blockIdx.y, n = blockIdx.z;
  const int cg = static_cast<int>(geo.channels / geo.groups), pixels = static_cast<int>(geo.pixels);
  const int pixel_stride = static_cast<int>(geo.nodes * geo.channels);
  const int chunks = static_cast<int>(geo.chunks), m = cg * pixels / chunks;
  const NodeInput<kCodes> in = node_input<kCodes>(x, node);
  const std::int64_t slice = (static_cast<std::int64_t>(n) * pixels) * pixel_stride +
                             static_cast<std::int64_t>(node) * geo.channels + group * cg;
  __shared__ float hi_of[kMaxChunks], lo_of[kMaxChunks];
  __shared__ int hi_at_of[kMaxChunks], lo_at_of[kMaxChunks];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int chunk = warp; chunk < chunks; chunk += kWarps) {
    // Lanes without a position hold (-inf / +inf, INT_MAX): they lose every tie.
    Extreme hi{-INFINITY, lane < m ? lane : INT_MAX}, lo{INFINITY, lane < m ? lane : INT_MAX};
    for (int t = lane; t < m; t += 32) {
      const int e = chunk * m + t;  // the group's element e: channel e / pixels, pixel e % pixels
      const float v = in[slice + (e % pixels) * pixel_stride + e / pixels];
      if (v > hi.value) hi = {v, t};
      if (v < lo.value) lo = {v, t};
    }
    for (int shift = 16; shift > 0; shift /= 2) {
      hi = higher(hi, shuffle_down(hi, shift));
      lo = lower(lo, shuffle_down(lo, shift));
    }
    if (lane == 0) {
      hi_of[chunk] = hi.value;
      lo_of[chunk] = lo.value;
      hi_at_of[chunk] = hi.at;
      lo_at_of[chunk] = lo.at;
    }
  }
  __syncthreads();
  const std::int64_t item = (static_cast<std::int64_t>(n) * geo.nodes + node) * geo.groups + group;
  if (threadIdx.x < chunks) {
    const int chunk = threadIdx.x;
    const int max_e = chunk * m + hi_at_of[chunk], min_e = chunk * m + lo_at_of[chunk];
    arg_max[item * chunks + chunk] = (max_e % pixels) * pixel_stride + group * cg + max_e / pixels;
    arg_min[item * chunks + chunk] = (min_e % pixels) * pixel_stride + group * cg + min_e / pixels;
  }
  if (threadIdx.x == 0) {
    float sum = 0.0f;  // in chunk order, in float, as the CPU kernel
    for (int chunk = 0; chunk < chunks; ++chunk) sum += hi_of[chunk] - lo_of[chunk];
    const float range = sum / static_cast<float>(chunks);
    scale[item] = 1.0f / (range * geo.range_factor + 1e-5f);
  }
}

// The group scale of channel kc (0 <= kc < k*C) of sample n.
__device__ float group_scale(const float* qs, const RangeEvoNormGeometry& geo, std::int64_t n,
                             std::int64_t kc) {
  const std::int64_t node = kc / geo.channels, cg = geo.channels / geo.groups;
  const std::int64_t group = (kc - node * geo.channels) / cg;
  return qs[(n * geo.nodes + node) * geo.groups + group];
}

__device__ float hard_sigmoid_argument(float x, float v) { return x * v / 6.0f + 0.5f; }

// Block (channel tile of 32, sample, part of the pixels): thread (tx, ty) takes channel
// tile * 32 + tx at pixels ty, ty + 8, ... of the part, its channel's parameters loaded once (one
// thread per element with 64-bit divisions for the sample and the group ran at a third of the
// memory's speed: docs/benchmarks.md, GPU, item 15).
constexpr int kTileChannels = 32, kTileRows = kThreads / kTileChannels;
template <bool kCodes>
__global__ void output_kernel(RangeEvoNormInput x, const float* __restrict__ v,
                              const float* __restrict__ qs, const float* __restrict__ gamma,
                              const float* __restrict__ beta, float* __restrict__ out,
                              RangeEvoNormGeometry geo, std::int64_t part_pixels) {
  const std::int64_t kc_count = geo.nodes * geo.channels, n = blockIdx.y;
  const std::int64_t kc =
      static_cast<std::int64_t>(blockIdx.x) * kTileChannels + threadIdx.x % kTileChannels;
  if (kc >= kc_count) return;
  const NodeInput<kCodes> in = node_input<kCodes>(x, kc / geo.channels);
  const float v_c = v[kc], s_c = group_scale(qs, geo, n, kc), g_c = gamma[kc], b_c = beta[kc];
  const std::int64_t begin = blockIdx.z * part_pixels;
  const std::int64_t end = begin + part_pixels < geo.pixels ? begin + part_pixels : geo.pixels;
  const auto at_pixel = [&](std::int64_t p) { return (n * geo.pixels + p) * kc_count + kc; };
  walk_pixels(
      begin + threadIdx.x / kTileChannels, end, kTileRows,
      [&](std::int64_t p) { return in[at_pixel(p)]; },
      [&](std::int64_t p, float value) {
        float h = hard_sigmoid_argument(value, v_c);
        h = h < 0.0f ? 0.0f : h;  // std::min(std::max(z, 0), 1) written out
        h = 1.0f < h ? 1.0f : h;
        out[at_pixel(p)] = value * h * s_c * g_c + b_c;
      });
}

// Block (channel tile of 32, sample): thread (tx, ty) takes channel tile * 32 + tx at pixels
// ty, ty + 8, ...; the CPU kernel's backward_pass per element, its per-channel sums reduced over
// ty in shared memory.
template <bool kCodes>
__global__ void backward_kernel(const float* __restrict__ dy, RangeEvoNormInput x,
                                const float* __restrict__ v, const float* __restrict__ qs,
                                const float* __restrict__ gamma, float* __restrict__ dx,
                                float* __restrict__ partial, RangeEvoNormGeometry geo) {
  const std::int64_t kc_count = geo.nodes * geo.channels, n = blockIdx.y;
  const std::int64_t kc =
      static_cast<std::int64_t>(blockIdx.x) * kTileChannels + threadIdx.x % kTileChannels;
  const int row = threadIdx.x / kTileChannels;
  float dv = 0.0f, dy_n = 0.0f, dbeta = 0.0f;
  float s_c = 0.0f, g_c = 0.0f;
  if (kc < kc_count) {
    s_c = group_scale(qs, geo, n, kc);
    g_c = gamma[kc];
    const float v_c = v[kc], gamma_s = g_c * s_c;
    const NodeInput<kCodes> in = node_input<kCodes>(x, kc / geo.channels);
    constexpr float kSixth = 1.0f / 6.0f;
    struct Operands {
      float value, d;
    };
    const auto at_pixel = [&](std::int64_t p) { return (n * geo.pixels + p) * kc_count + kc; };
    walk_pixels(
        row, geo.pixels, kTileRows,
        [&](std::int64_t p) {
          return Operands{in[at_pixel(p)], dy[at_pixel(p)]};
        },
        [&](std::int64_t p, Operands e) {
          const float value = e.value, d = e.d;
          const float z = hard_sigmoid_argument(value, v_c);
          float h = z < 0.0f ? 0.0f : z;
          h = 1.0f < h ? 1.0f : h;
          const float inside = (z >= 0.0f && z <= 1.0f) ? 1.0f : 0.0f;
          dbeta += d;
          dy_n += d * (value * h);
          const float dn = d * gamma_s;
          const float dz = dn * value * inside * kSixth;
          dx[at_pixel(p)] = dn * h + dz * v_c;
          dv += dz * value;
        });
  }
  __shared__ float sums[3][kTileRows][kTileChannels];
  const int column = threadIdx.x % kTileChannels;
  sums[0][row][column] = dv;
  sums[1][row][column] = dy_n;
  sums[2][row][column] = dbeta;
  __syncthreads();
  if (row == 0 && kc < kc_count) {
    float total[3] = {0.0f, 0.0f, 0.0f};
    for (int q = 0; q < 3; ++q) {
      for (int r = 0; r < kTileRows; ++r) total[q] += sums[q][r][column];
    }
    const std::int64_t plane = geo.samples * kc_count, at = n * kc_count + kc;
    partial[at] = total[0];                    // dv
    partial[plane + at] = total[1] * s_c;      // dgamma
    partial[2 * plane + at] = total[2];        // dbeta
    partial[3 * plane + at] = total[1] * g_c;  // the group scale's, per channel
  }
}

// Thread per (sample, node, group, chunk): the group scale's gradient ds (the sum of its
// channels' shares), then through s = 1 / (R f + eps) and R = mean_j (max_j - min_j) to the
// chunk's extremes: d = -ds s^2 f / chunks (in ATen's order of those products), added at the
// chunk's max and taken at its min. A chunk's two positions can be one element (a constant
// chunk), so the thread applies both in the CPU kernel's order.
__global__ void statistic_backward_kernel(const std::int32_t* __restrict__ arg_max,
                                          const std::int32_t* __restrict__ arg_min,
                                          const float* __restrict__ channel_grad,
                                          const float* __restrict__ scale, float* __restrict__ dx,
                                          RangeEvoNormGeometry geo) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(kThreads) + threadIdx.x;
  const std::int64_t count = geo.samples * geo.nodes * geo.groups * geo.chunks;
  if (i >= count) return;
  const std::int64_t item = i / geo.chunks;            // (sample, node, group)
  const std::int64_t slice_index = item / geo.groups;  // sample * nodes + node
  const std::int64_t group = item - slice_index * geo.groups;
  const std::int64_t n = slice_index / geo.nodes, node = slice_index - n * geo.nodes;
  const std::int64_t cg = geo.channels / geo.groups;
  const float* shares = channel_grad + (n * geo.nodes + node) * geo.channels + group * cg;
  float ds = 0.0f;
  for (std::int64_t c = 0; c < cg; ++c) ds += shares[c];
  const float s = scale[item];
  float d = -ds;
  d = d * s;
  d = d * s;
  d = d * geo.range_factor;
  d = d / static_cast<float>(geo.chunks);
  float* slice = dx + n * geo.pixels * geo.nodes * geo.channels + node * geo.channels;
  slice[arg_max[i]] += d;
  slice[arg_min[i]] -= d;
}

void check_input(const RangeEvoNormInput& x) {
  if ((x.values == nullptr) == (x.codes == nullptr) ||
      (x.codes != nullptr && (x.scale == nullptr || x.zero_point == nullptr))) {
    throw std::invalid_argument(
        "CUDA Range EvoNorm: the input must be values, or codes with their scale and zero point");
  }
}

// Runs launch.template operator()<kCodes>() for x's kind of input.
template <typename Launch>
void with_input_kind(const RangeEvoNormInput& x, Launch&& launch) {
  check_input(x);
  if (x.codes != nullptr) {
    launch.template operator()<true>();
  } else {
    launch.template operator()<false>();
  }
}

}  // namespace

void range_statistic(const RangeEvoNormInput& x, const RangeEvoNormGeometry& g, float* scale,
                     std::int32_t* arg_max, std::int32_t* arg_min, void* stream) {
  check_geometry(g);
  if (g.samples == 0) return;
  const dim3 grid(static_cast<unsigned>(g.groups), static_cast<unsigned>(g.nodes),
                  static_cast<unsigned>(g.samples));
  with_input_kind(x, [&]<bool kCodes>() {
    range_statistic_kernel<kCodes>
        <<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, g, scale, arg_max, arg_min);
  });
  check_launch("range_statistic");
}

void range_evonorm_output(const RangeEvoNormInput& x, const float* v, const float* qs,
                          const float* gamma, const float* beta, float* out,
                          const RangeEvoNormGeometry& g, void* stream) {
  check_geometry(g);
  if (g.samples * g.pixels * g.nodes * g.channels == 0) return;
  // About 2,048 blocks (two waves on a GPU of ~130 multiprocessors), each thread at least four
  // pixels.
  const std::int64_t tiles = (g.nodes * g.channels + kTileChannels - 1) / kTileChannels;
  const std::int64_t max_parts = std::max<std::int64_t>(1, g.pixels / (4 * kTileRows));
  const std::int64_t parts =
      std::clamp<std::int64_t>((2048 + tiles * g.samples - 1) / (tiles * g.samples), 1, max_parts);
  const std::int64_t part_pixels = (g.pixels + parts - 1) / parts;
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(g.samples),
                  static_cast<unsigned>((g.pixels + part_pixels - 1) / part_pixels));
  with_input_kind(x, [&]<bool kCodes>() {
    output_kernel<kCodes><<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        x, v, qs, gamma, beta, out, g, part_pixels);
  });
  check_launch("output");
}

void range_evonorm_backward(const float* dy, const RangeEvoNormInput& x, const float* v,
                            const float* qs, const float* gamma, float* dx, float* partial,
                            const RangeEvoNormGeometry& g, void* stream) {
  check_geometry(g);
  if (g.samples == 0) return;
  const std::int64_t kc_count = g.nodes * g.channels;
  const dim3 grid(static_cast<unsigned>((kc_count + kTileChannels - 1) / kTileChannels),
                  static_cast<unsigned>(g.samples));
  with_input_kind(x, [&]<bool kCodes>() {
    backward_kernel<kCodes><<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        dy, x, v, qs, gamma, dx, partial, g);
  });
  check_launch("backward");
}

void range_statistic_backward(const std::int32_t* arg_max, const std::int32_t* arg_min,
                              const float* channel_grad, const float* scale, float* dx,
                              const RangeEvoNormGeometry& g, void* stream) {
  check_geometry(g);
  const std::int64_t count = g.samples * g.nodes * g.groups * g.chunks;
  if (count == 0) return;
  const auto blocks = static_cast<unsigned>((count + kThreads - 1) / kThreads);
  statistic_backward_kernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      arg_max, arg_min, channel_grad, scale, dx, g);
  check_launch("statistic_backward");
}

}  // namespace lpdt::nn::cuda_kernels
