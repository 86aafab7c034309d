#include "lpdt/nn/max_pool_2x2.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <c10/core/GradMode.h>

#include <cstdint>
#include <vector>

#include "lpdt/core/cpu_dispatch.h"

namespace lpdt::nn {
namespace {

// LibTorch's rule for a window's next element v against the maximum so far m: v when greater or
// NaN. Written so that GCC 12 vectorises it: with the NaN test as `v != v` or `std::isnan(v)` in
// the same condition as the compare, the loops below stayed scalar.
inline float take_greater_or_nan(float m, float v) {
  const float greater = v > m ? v : m;
  return __builtin_isunordered(v, v) ? v : greater;
}

// Every window's maximum for one output row of a channels-last image, in two passes so that both
// vectorise whatever the channel count. top and bottom are input rows 2 oh and 2 oh + 1 ([W, C]
// each). First, for every position j of the row (a window's corner (2 ow, ch) at j = 2 ow C + ch,
// and as many positions between them, computed and dropped): the maximum of top[j], top[j + C],
// bottom[j], bottom[j + C] as a tree, (top pair, bottom pair), which picks what the scan in order
// picks (the first maximum, or the last NaN). Then each window's C values copied out. A loop over
// a pixel's C channels instead ran one element at a time for C = 6 or 16, its compares branches
// that random data mispredicts: as slow as LibTorch's kernel. maxima: [(2 out_width - 1) C]
// scratch; out: [out_width, C].
LPDT_CPU_CLONES void pool_row(const float* __restrict top, const float* __restrict bottom,
                              float* __restrict maxima, float* __restrict out,
                              std::int64_t out_width, std::int64_t channels) {
  const std::int64_t positions = (2 * out_width - 1) * channels;
  for (std::int64_t j = 0; j < positions; ++j) {
    const float upper = take_greater_or_nan(top[j], top[j + channels]);
    const float lower = take_greater_or_nan(bottom[j], bottom[j + channels]);
    maxima[j] = take_greater_or_nan(upper, lower);
  }
  for (std::int64_t ow = 0; ow < out_width; ++ow) {
    const float* window = maxima + 2 * ow * channels;
    float* o = out + ow * channels;
    for (std::int64_t ch = 0; ch < channels; ++ch) o[ch] = window[ch];
  }
}

// Rows of output per parallel task: a LeNet-5 row is a few hundred floats.
constexpr std::int64_t kRowsPerTask = 16;

}  // namespace

bool max_pool_2x2_takes_kernel(const at::Tensor& x) {
  return x.device().is_cpu() && x.scalar_type() == at::kFloat && x.dim() == 4 &&
         x.size(2) >= 2 && x.size(3) >= 2 &&
         x.is_contiguous(at::MemoryFormat::ChannelsLast) &&
         !(c10::GradMode::is_enabled() && x.requires_grad());
}

at::Tensor max_pool_2x2(const at::Tensor& x) {
  if (!max_pool_2x2_takes_kernel(x)) return at::max_pool2d(x, {2, 2}, {2, 2});
  RECORD_FUNCTION("lpdt::max_pool_2x2", std::vector<c10::IValue>{x});
  const std::int64_t n = x.size(0), channels = x.size(1), height = x.size(2), width = x.size(3);
  const std::int64_t out_height = height / 2, out_width = width / 2;
  at::Tensor out = at::empty({n, channels, out_height, out_width},
                             x.options().memory_format(at::MemoryFormat::ChannelsLast));
  const float* in = x.data_ptr<float>();
  float* o = out.data_ptr<float>();
  const std::int64_t row = width * channels, out_row = out_width * channels;
  at::parallel_for(0, n * out_height, kRowsPerTask, [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> maxima(static_cast<std::size_t>((2 * out_width - 1) * channels));
    for (std::int64_t r = begin; r < end; ++r) {
      const std::int64_t image = r / out_height, oh = r % out_height;
      const float* top = in + (image * height + 2 * oh) * row;
      pool_row(top, top + row, maxima.data(), o + r * out_row, out_width, channels);
    }
  });
  return out;
}

}  // namespace lpdt::nn
