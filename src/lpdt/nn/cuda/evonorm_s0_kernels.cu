// EvoNorm-S0's CUDA kernels (evonorm_s0_kernels.h): NCHW tensors one block per (sample, group),
// channels-last ones per (channel tile, sample, pixel part); the equations are those of
// nn/evonorm_kernel.h, statistics and sums accumulated in double.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "lpdt/core/cuda/launch_check.h"
#include "lpdt/nn/cuda/evonorm_s0_kernels.h"
#include "lpdt/nn/cuda/pixel_parts.h"
#include "lpdt/nn/cuda/walk_pixels.h"

namespace lpdt::nn::cuda_kernels {
namespace {

constexpr int kThreads = 256;

void check_launch(const char* kernel) {
  lpdt::cuda_kernels::check_launch(std::string("CUDA EvoNorm-S0 kernel ") + kernel);
}

void check_shape(const EvoNormShape& s) {
  if (!evonorm_s0_supports(s.channels_per_group) || s.channels % s.channels_per_group != 0 ||
      s.samples > 65535) {
    throw std::invalid_argument(
        "CUDA EvoNorm-S0: unsupported shape (channels per group must divide 256 and the channel "
        "count; at most 65,535 samples)");
  }
}

// Block-wide sum; every thread gets the result.
__device__ double block_sum(double value) {
  __shared__ double partial[kThreads / 32];
  for (int shift = 16; shift > 0; shift /= 2) value += __shfl_down_sync(0xffffffffu, value, shift);
  __syncthreads();  // partial may still be read by an earlier call
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < kThreads / 32; ++w) total += partial[w];
  return total;
}

__device__ float sigmoid(float z) { return 1.0f / (1.0f + expf(-z)); }

// The per-element equations of evonorm_kernel.h, shared by both kernel layouts.
__device__ float output_of(float x, float v, float scale, float shift) {
  return x * sigmoid(v * x) * scale + shift;  // scale = r * gamma, shift = beta
}
// r = 1 / sqrt(var + eps) from a group's sum and sum of squares over `count` elements.
__device__ float rstd_of(double sum, double squares, double count, double eps, double& mean) {
  mean = sum / count;
  const double variance = fmax(squares / count - mean * mean, 0.0);
  return static_cast<float>(1.0 / sqrt(variance + eps));
}
// Pass 1 of the backward: one element's terms of dr and of the parameter gradients.
struct BackwardSums {
  double dr = 0.0, dv = 0.0, dgamma = 0.0, dbeta = 0.0;
  __device__ void add(float x, float dy, float v, float gamma, float r) {
    const float s = sigmoid(v * x), num = x * s;
    const float dnum = dy * gamma * r;
    dbeta += dy;
    dgamma += dy * num * r;
    dv += dnum * x * x * s * (1.0f - s);
    dr += dy * gamma * num;
  }
};
// dvar = -dr r^3 / 2; the variance's gradient reaches x as dvar * 2 (x - mean) / N: the factor of
// (x - mean).
__device__ float deviation_coefficient(double dr, float r, double count) {
  return static_cast<float>(-0.5 * dr * r * r * r * 2.0 / count);
}
// Pass 2: one element's input gradient.
__device__ float input_gradient(float x, float dy, float v, float gamma, float r, float mean,
                                float coefficient) {
  const float s = sigmoid(v * x);
  const float dnum = dy * gamma * r;
  return dnum * (s + v * x * s * (1.0f - s)) + coefficient * (x - mean);
}

// The elements of (sample n, group g) that thread t visits: channel g * cpg + t % cpg (fixed, as
// cpg divides kThreads) at pixels t / cpg, t / cpg + kThreads / cpg, ...: no divisions in the
// loops, and consecutive threads read consecutive channels of a pixel in channels-last memory.
struct ThreadWalk {
  std::int64_t channel, first_pixel, pixel_step;
  __device__ ThreadWalk(std::int64_t group, std::int64_t cpg)
      : channel(group * cpg + threadIdx.x % cpg),
        first_pixel(threadIdx.x / cpg),
        pixel_step(kThreads / cpg) {}
  __device__ std::int64_t offset(const Strides& s, std::int64_t n, std::int64_t pixel) const {
    return n * s.sample + channel * s.channel + pixel * s.pixel;
  }
};

__global__ void forward_kernel(const float* __restrict__ x, Strides xs, const float* __restrict__ v,
                               const float* __restrict__ gamma, const float* __restrict__ beta,
                               float* __restrict__ y, float* __restrict__ mean_out,
                               float* __restrict__ rstd_out, EvoNormShape shape, double eps) {
  const std::int64_t group = blockIdx.x, n = blockIdx.y, groups = gridDim.x;
  const ThreadWalk walk(group, shape.channels_per_group);
  const std::int64_t count = shape.channels_per_group * shape.pixels;
  double sum = 0.0, squares = 0.0;
  for (std::int64_t p = walk.first_pixel; p < shape.pixels; p += walk.pixel_step) {
    const double value = x[walk.offset(xs, n, p)];
    sum += value;
    squares += value * value;
  }
  sum = block_sum(sum);
  squares = block_sum(squares);
  double mean = 0.0;
  const float r = rstd_of(sum, squares, static_cast<double>(count), eps, mean);
  if (threadIdx.x == 0) {
    mean_out[n * groups + group] = static_cast<float>(mean);
    rstd_out[n * groups + group] = r;
  }
  const float vc = v[walk.channel], scale = r * gamma[walk.channel], shift = beta[walk.channel];
  for (std::int64_t p = walk.first_pixel; p < shape.pixels; p += walk.pixel_step) {
    const std::int64_t at = walk.offset(xs, n, p);
    y[at] = output_of(x[at], vc, scale, shift);
  }
}

// Where the backward's partial sums go in its double scratch: per-channel sums of parameter
// gradients at ((q * sample_parts + row) * channels + c), q = dv, dgamma, dbeta, row = n * parts +
// part (row = n for the NCHW kernel); then dr per (row, group).
struct BackwardScratch {
  std::int64_t sample_parts, channels, groups;
  __host__ __device__ std::int64_t parameter(int q, std::int64_t row, std::int64_t c) const {
    return (q * sample_parts + row) * channels + c;
  }
  __host__ __device__ std::int64_t dr(std::int64_t row, std::int64_t group) const {
    return 3 * sample_parts * channels + row * groups + group;
  }
};

// Pass 1 sums dr over the group and each channel's parameter gradients over the block; pass 2
// writes dx. Per-channel sums of this sample go to scratch[layout.parameter(q, n, c)].
__global__ void backward_kernel(const float* __restrict__ dy, Strides dys,
                                const float* __restrict__ x, Strides xs,
                                const float* __restrict__ v, const float* __restrict__ gamma,
                                const float* __restrict__ mean_in,
                                const float* __restrict__ rstd_in, float* __restrict__ dx,
                                double* __restrict__ scratch, EvoNormShape shape,
                                BackwardScratch layout) {
  const std::int64_t group = blockIdx.x, n = blockIdx.y, groups = gridDim.x;
  const ThreadWalk walk(group, shape.channels_per_group);
  const std::int64_t cpg = shape.channels_per_group, count = cpg * shape.pixels;
  const float mean = mean_in[n * groups + group], r = rstd_in[n * groups + group];
  const float vc = v[walk.channel], gc = gamma[walk.channel];
  BackwardSums sums;
  for (std::int64_t p = walk.first_pixel; p < shape.pixels; p += walk.pixel_step) {
    sums.add(x[walk.offset(xs, n, p)], dy[walk.offset(dys, n, p)], vc, gc, r);
  }
  const double dr = block_sum(sums.dr);
  __shared__ double per_thread[3][kThreads];
  per_thread[0][threadIdx.x] = sums.dv;
  per_thread[1][threadIdx.x] = sums.dgamma;
  per_thread[2][threadIdx.x] = sums.dbeta;
  __syncthreads();
  if (threadIdx.x < cpg) {  // thread t sums the threads of its channel, t, t + cpg, ...
    for (int q = 0; q < 3; ++q) {
      double total = 0.0;
      for (std::int64_t t = threadIdx.x; t < kThreads; t += cpg) total += per_thread[q][t];
      scratch[layout.parameter(q, n, walk.channel)] = total;
    }
  }
  const float coefficient = deviation_coefficient(dr, r, static_cast<double>(count));
  for (std::int64_t p = walk.first_pixel; p < shape.pixels; p += walk.pixel_step) {
    const std::int64_t at = walk.offset(xs, n, p);
    dx[at] = input_gradient(x[at], dy[walk.offset(dys, n, p)], vc, gc, r, mean, coefficient);
  }
}

// Channels-last tensors take tiles instead: a block holds `tile` consecutive channels (whole
// groups) of one sample, its threads (tile channels) x (kThreads / tile rows of pixels), so that a
// warp reads consecutive channels of consecutive pixels (whole 128-byte lines when tile is 32).
// One block per (sample, group) read each pixel's cpg channels (8 bytes for ResNet-20's first
// stage) a pixel apart, a quarter of every line fetched. Each thread's channel is fixed; sums go
// per channel over the rows, then per group in shared memory.
struct TileWalk {
  int tile, rows, column, row;
  std::int64_t channel;
  __device__ explicit TileWalk(int tile_channels)
      : tile(tile_channels),
        rows(kThreads / tile_channels),
        column(threadIdx.x % tile_channels),
        row(threadIdx.x / tile_channels),
        channel(static_cast<std::int64_t>(blockIdx.x) * tile_channels +
                threadIdx.x % tile_channels) {}
  __device__ std::int64_t offset(const Strides& s, std::int64_t n, std::int64_t pixel) const {
    return n * s.sample + channel * s.channel + pixel * s.pixel;
  }
  // The sum over rows and over the cpg channels of group `local_group` of the tile, in order.
  __device__ double group_sum(const double* per_thread, int local_group, int cpg) const {
    double total = 0.0;
    for (int r = 0; r < rows; ++r) {
      for (int cl = 0; cl < cpg; ++cl) total += per_thread[r * tile + local_group * cpg + cl];
    }
    return total;
  }
};

struct Pair {
  float x, dy;
};

// The tiled kernels split each (tile, sample)'s pixels over blockIdx.z (pixel_parts.h): a first
// kernel writes each part's group sums, a second combines them in part order and makes the
// outputs of its part. Partial sums: forward, partial[((n * parts + part) * groups + g) * 2 + i]
// (i = sum, sum of squares); backward, dr at the end of the scratch (BackwardScratch).
__global__ void forward_sums_tiled_kernel(const float* __restrict__ x, Strides xs,
                                          EvoNormShape shape, int tile, PixelParts parts,
                                          double* __restrict__ partial) {
  const std::int64_t n = blockIdx.y, part = blockIdx.z;
  const std::int64_t groups = shape.channels / shape.channels_per_group;
  const int cpg = static_cast<int>(shape.channels_per_group);
  const TileWalk walk(tile);
  double sum = 0.0, squares = 0.0;
  walk_pixels(
      parts.begin(part) + walk.row, parts.end(part), walk.rows,
      [&](std::int64_t p) { return x[walk.offset(xs, n, p)]; },
      [&](std::int64_t, float x_value) {
        const double value = x_value;
        sum += value;
        squares += value * value;
      });
  __shared__ double sums[kThreads], square_sums[kThreads];
  sums[threadIdx.x] = sum;
  square_sums[threadIdx.x] = squares;
  __syncthreads();
  if (static_cast<int>(threadIdx.x) < tile / cpg) {
    const int local_group = threadIdx.x;
    const std::int64_t group = static_cast<std::int64_t>(blockIdx.x) * (tile / cpg) + local_group;
    double* out = partial + ((n * parts.count + part) * groups + group) * 2;
    out[0] = walk.group_sum(sums, local_group, cpg);
    out[1] = walk.group_sum(square_sums, local_group, cpg);
  }
}

__global__ void forward_output_tiled_kernel(
    const float* __restrict__ x, Strides xs, const float* __restrict__ v,
    const float* __restrict__ gamma, const float* __restrict__ beta, float* __restrict__ y,
    float* __restrict__ mean_out, float* __restrict__ rstd_out, EvoNormShape shape, double eps,
    int tile, PixelParts parts, const double* __restrict__ partial) {
  const std::int64_t n = blockIdx.y, part = blockIdx.z;
  const std::int64_t groups = shape.channels / shape.channels_per_group;
  const int cpg = static_cast<int>(shape.channels_per_group);
  const TileWalk walk(tile);
  __shared__ float group_r[kThreads];
  if (static_cast<int>(threadIdx.x) < tile / cpg) {
    const int local_group = threadIdx.x;
    const std::int64_t group = static_cast<std::int64_t>(blockIdx.x) * (tile / cpg) + local_group;
    double sum = 0.0, squares = 0.0;
    for (std::int64_t q = 0; q < parts.count; ++q) {
      const double* in = partial + ((n * parts.count + q) * groups + group) * 2;
      sum += in[0];
      squares += in[1];
    }
    double mean = 0.0;
    const float r = rstd_of(sum, squares, static_cast<double>(cpg * shape.pixels), eps, mean);
    group_r[local_group] = r;
    if (part == 0) {
      mean_out[n * groups + group] = static_cast<float>(mean);
      rstd_out[n * groups + group] = r;
    }
  }
  __syncthreads();
  const float r = group_r[walk.column / cpg];
  const float vc = v[walk.channel], scale = r * gamma[walk.channel], shift = beta[walk.channel];
  walk_pixels(
      parts.begin(part) + walk.row, parts.end(part), walk.rows,
      [&](std::int64_t p) { return x[walk.offset(xs, n, p)]; },
      [&](std::int64_t p, float x_value) {
        y[walk.offset(xs, n, p)] = output_of(x_value, vc, scale, shift);
      });
}

__global__ void backward_sums_tiled_kernel(const float* __restrict__ dy, Strides dys,
                                           const float* __restrict__ x, Strides xs,
                                           const float* __restrict__ v,
                                           const float* __restrict__ gamma,
                                           const float* __restrict__ rstd_in,
                                           double* __restrict__ scratch, EvoNormShape shape,
                                           int tile, PixelParts parts, BackwardScratch layout) {
  const std::int64_t n = blockIdx.y, part = blockIdx.z, row = n * parts.count + part;
  const std::int64_t groups = layout.groups;
  const int cpg = static_cast<int>(shape.channels_per_group);
  const TileWalk walk(tile);
  const std::int64_t group = walk.channel / cpg;
  const float r = rstd_in[n * groups + group];
  const float vc = v[walk.channel], gc = gamma[walk.channel];
  BackwardSums sums;
  walk_pixels(
      parts.begin(part) + walk.row, parts.end(part), walk.rows,
      [&](std::int64_t p) {
        return Pair{x[walk.offset(xs, n, p)], dy[walk.offset(dys, n, p)]};
      },
      [&](std::int64_t, Pair e) { sums.add(e.x, e.dy, vc, gc, r); });
  __shared__ double per_thread[4][kThreads];
  per_thread[0][threadIdx.x] = sums.dr;
  per_thread[1][threadIdx.x] = sums.dv;
  per_thread[2][threadIdx.x] = sums.dgamma;
  per_thread[3][threadIdx.x] = sums.dbeta;
  __syncthreads();
  if (static_cast<int>(threadIdx.x) < tile / cpg) {
    const std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * (tile / cpg) + threadIdx.x;
    scratch[layout.dr(row, g)] = walk.group_sum(per_thread[0], threadIdx.x, cpg);
  }
  if (walk.row == 0) {  // thread (column, 0): its channel's sums over the rows
    for (int q = 0; q < 3; ++q) {
      double total = 0.0;
      for (int t = 0; t < walk.rows; ++t) total += per_thread[q + 1][t * tile + walk.column];
      scratch[layout.parameter(q, row, walk.channel)] = total;
    }
  }
}

__global__ void backward_input_tiled_kernel(
    const float* __restrict__ dy, Strides dys, const float* __restrict__ x, Strides xs,
    const float* __restrict__ v, const float* __restrict__ gamma, const float* __restrict__ mean_in,
    const float* __restrict__ rstd_in, float* __restrict__ dx, const double* __restrict__ scratch,
    EvoNormShape shape, int tile, PixelParts parts, BackwardScratch layout) {
  const std::int64_t n = blockIdx.y, part = blockIdx.z, groups = layout.groups;
  const int cpg = static_cast<int>(shape.channels_per_group);
  const TileWalk walk(tile);
  const std::int64_t group = walk.channel / cpg;
  const float mean = mean_in[n * groups + group], r = rstd_in[n * groups + group];
  const float vc = v[walk.channel], gc = gamma[walk.channel];
  __shared__ double group_dr[kThreads];
  if (static_cast<int>(threadIdx.x) < tile / cpg) {
    const std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * (tile / cpg) + threadIdx.x;
    double dr = 0.0;
    for (std::int64_t q = 0; q < parts.count; ++q) dr += scratch[layout.dr(n * parts.count + q, g)];
    group_dr[threadIdx.x] = dr;
  }
  __syncthreads();
  const float coefficient = deviation_coefficient(group_dr[walk.column / cpg], r,
                                                  static_cast<double>(cpg * shape.pixels));
  walk_pixels(
      parts.begin(part) + walk.row, parts.end(part), walk.rows,
      [&](std::int64_t p) {
        return Pair{x[walk.offset(xs, n, p)], dy[walk.offset(dys, n, p)]};
      },
      [&](std::int64_t p, Pair e) {
        dx[walk.offset(xs, n, p)] = input_gradient(e.x, e.dy, vc, gc, r, mean, coefficient);
      });
}

// The tile width for a channels-last tensor: the widest of 32, 16, ... dividing the channel count
// and holding whole groups; groups wider than 32 channels are a tile each.
int tile_channels(const EvoNormShape& s) {
  if (s.channels_per_group > 32) return static_cast<int>(s.channels_per_group);
  for (int tile = 32; tile > 1; tile /= 2) {
    if (s.channels % tile == 0 && tile % s.channels_per_group == 0) return tile;
  }
  return static_cast<int>(s.channels_per_group);
}

// The sum over the scratch's rows (samples, or samples x parts) of each (q, channel): a block
// per 32 consecutive items, its 8 lanes of 32 threads taking every 8th row, combined in lane
// order (one thread per item walking all 256 rows of a 16-node stage-1 layer took 28 us a call).
constexpr int kSumColumns = 32, kSumLanes = kThreads / kSumColumns;
__global__ void sum_over_samples_kernel(const double* __restrict__ scratch, BackwardScratch layout,
                                        float* dv, float* dgamma, float* dbeta) {
  const int column = threadIdx.x % kSumColumns, lane = threadIdx.x / kSumColumns;
  const std::int64_t item = static_cast<std::int64_t>(blockIdx.x) * kSumColumns + column;
  const bool active = item < 3 * layout.channels;
  const int q = active ? static_cast<int>(item / layout.channels) : 0;
  const std::int64_t c = active ? item % layout.channels : 0;
  double total = 0.0;
  if (active) {
    for (std::int64_t row = lane; row < layout.sample_parts; row += kSumLanes) {
      total += scratch[layout.parameter(q, row, c)];
    }
  }
  __shared__ double lanes[kSumLanes][kSumColumns];
  lanes[lane][column] = total;
  __syncthreads();
  if (lane == 0 && active) {
    double sum = 0.0;
    for (int l = 0; l < kSumLanes; ++l) sum += lanes[l][column];
    float* out = q == 0 ? dv : (q == 1 ? dgamma : dbeta);
    out[c] = static_cast<float>(sum);
  }
}

// The pixel parts of a channels-last launch: tiles x samples blocks of kThreads / tile rows.
PixelParts tiled_parts(const EvoNormShape& s, int tile) {
  return pixel_parts((s.channels / tile) * s.samples, s.pixels, kThreads / tile);
}

dim3 tiled_grid(const EvoNormShape& s, int tile, const PixelParts& parts) {
  return dim3(static_cast<unsigned>(s.channels / tile), static_cast<unsigned>(s.samples),
              static_cast<unsigned>(parts.count));
}

}  // namespace

bool evonorm_s0_supports(std::int64_t channels_per_group) {
  return channels_per_group >= 1 && channels_per_group <= kThreads &&
         kThreads % channels_per_group == 0;
}

std::int64_t evonorm_s0_forward_scratch(const EvoNormShape& shape) {
  const PixelParts parts = tiled_parts(shape, tile_channels(shape));
  return shape.samples * parts.count * (shape.channels / shape.channels_per_group) * 2;
}

void evonorm_s0_forward(const float* x, const Strides& xs, const float* v, const float* gamma,
                        const float* beta, float* y, float* mean, float* rstd, double* scratch,
                        const EvoNormShape& shape, double eps, void* stream) {
  check_shape(shape);
  if (shape.samples == 0 || shape.pixels == 0) return;
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  if (xs.channel == 1) {
    const int tile = tile_channels(shape);
    const PixelParts parts = tiled_parts(shape, tile);
    const dim3 grid = tiled_grid(shape, tile, parts);
    forward_sums_tiled_kernel<<<grid, kThreads, 0, cuda_stream>>>(x, xs, shape, tile, parts,
                                                                  scratch);
    check_launch("forward_sums_tiled");
    forward_output_tiled_kernel<<<grid, kThreads, 0, cuda_stream>>>(
        x, xs, v, gamma, beta, y, mean, rstd, shape, eps, tile, parts, scratch);
    check_launch("forward_output_tiled");
    return;
  }
  const dim3 grid(static_cast<unsigned>(shape.channels / shape.channels_per_group),
                  static_cast<unsigned>(shape.samples));
  forward_kernel<<<grid, kThreads, 0, cuda_stream>>>(x, xs, v, gamma, beta, y, mean, rstd, shape,
                                                     eps);
  check_launch("forward");
}

std::int64_t evonorm_s0_backward_scratch(const EvoNormShape& shape) {
  const PixelParts parts = tiled_parts(shape, tile_channels(shape));
  const std::int64_t groups = shape.channels / shape.channels_per_group;
  return shape.samples * parts.count * (3 * shape.channels + groups);
}

void evonorm_s0_backward(const float* dy, const Strides& dys, const float* x, const Strides& xs,
                         const float* v, const float* gamma, const float* mean, const float* rstd,
                         float* dx, float* dv, float* dgamma, float* dbeta, double* scratch,
                         const EvoNormShape& shape, void* stream) {
  check_shape(shape);
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  const std::int64_t groups = shape.channels / shape.channels_per_group;
  BackwardScratch layout{shape.samples, shape.channels, groups};
  if (shape.samples > 0 && shape.pixels > 0 && xs.channel == 1 && dys.channel == 1) {
    const int tile = tile_channels(shape);
    const PixelParts parts = tiled_parts(shape, tile);
    const dim3 grid = tiled_grid(shape, tile, parts);
    layout.sample_parts = shape.samples * parts.count;
    backward_sums_tiled_kernel<<<grid, kThreads, 0, cuda_stream>>>(
        dy, dys, x, xs, v, gamma, rstd, scratch, shape, tile, parts, layout);
    check_launch("backward_sums_tiled");
    backward_input_tiled_kernel<<<grid, kThreads, 0, cuda_stream>>>(
        dy, dys, x, xs, v, gamma, mean, rstd, dx, scratch, shape, tile, parts, layout);
    check_launch("backward_input_tiled");
  } else if (shape.samples > 0 && shape.pixels > 0) {
    const dim3 grid(static_cast<unsigned>(groups), static_cast<unsigned>(shape.samples));
    backward_kernel<<<grid, kThreads, 0, cuda_stream>>>(dy, dys, x, xs, v, gamma, mean, rstd, dx,
                                                        scratch, shape, layout);
    check_launch("backward");
  } else {
    cudaMemsetAsync(scratch, 0, sizeof(double) * evonorm_s0_backward_scratch(shape), cuda_stream);
  }
  const auto items = static_cast<unsigned>((3 * shape.channels + kSumColumns - 1) / kSumColumns);
  const unsigned blocks = items > 0 ? items : 1;
  sum_over_samples_kernel<<<blocks, kThreads, 0, cuda_stream>>>(scratch, layout, dv, dgamma, dbeta);
  check_launch("sum_over_samples");
}

}  // namespace lpdt::nn::cuda_kernels
