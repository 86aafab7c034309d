// Where the parameter segments' CUDA kernels put each element (nn/cuda/param_segment_place.h):
// the layout gather_param_segments promises (channels-last strides for convolution weights), one
// element per place.
#include "lpdt/nn/cuda/param_segment_place.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <vector>

namespace lpdt::nn::cuda_kernels {
namespace {

TEST(ParamSegmentPlace, ConvolutionWeightsChannelsLastOtherSegmentsInOrder) {
  struct Case {
    std::int64_t out, in, kh, kw;
  };
  for (const Case c : {Case{4, 3, 3, 3}, Case{64, 64, 3, 3}, Case{5, 1, 3, 3}, Case{2, 7, 1, 5}}) {
    const std::int64_t numel = c.out * c.in * c.kh * c.kw;
    const at::Tensor values = torch::randn({c.out, c.in, c.kh, c.kw});  // the parameter's order
    at::Tensor stored = torch::zeros({numel});
    std::vector<int> hits(static_cast<std::size_t>(numel), 0);
    const auto in = static_cast<std::int32_t>(c.in),
               positions = static_cast<std::int32_t>(c.kh * c.kw);
    for (std::int32_t j = 0; j < numel; ++j) {
      const std::int32_t place = place_in_segment(j, in, positions);
      ASSERT_GE(place, 0);
      ASSERT_LT(place, numel);
      ++hits[place];
      stored[place] = values.flatten()[j];
    }
    for (const int h : hits) ASSERT_EQ(h, 1);
    // Read back through channels-last strides: the parameter's values.
    const at::Tensor channels_last =
        stored.as_strided({c.out, c.in, c.kh, c.kw}, {c.in * c.kh * c.kw, 1, c.kw * c.in, c.in});
    EXPECT_TRUE(at::equal(channels_last, values));
    // Other segments keep their order.
    for (std::int32_t j = 0; j < numel; j += 7) EXPECT_EQ(place_in_segment(j, 0, 1), j);
  }
}

}  // namespace
}  // namespace lpdt::nn::cuda_kernels
