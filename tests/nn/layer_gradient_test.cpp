// Layers against central finite differences, in float64.
#include <gtest/gtest.h>
#include <torch/types.h>

#include "finite_difference.h"
#include "lpdt/nn/batch_norm.h"
#include "lpdt/nn/conv2d.h"
#include "lpdt/nn/evonorm.h"
#include "lpdt/nn/linear.h"

namespace lpdt::nn {
namespace {

using testing::check_param_gradient;

TEST(LayerGradients, EvoNormS0) {
  Registry registry;
  EvoNormS0 norm(registry, "evo", 4, 2);
  const std::int64_t k = 2;
  const at::Tensor x = torch::randn({3, k * 4, 3, 3}, torch::kDouble);
  const at::Tensor params0 = torch::randn({k, registry.layout().total_numel}, torch::kDouble);
  check_param_gradient(params0, [&](const at::Tensor& p) {
    Context ctx{&registry.layout(), p, nullptr, k, true};
    return norm.forward(ctx, x);
  });
  // And with respect to the input.
  Context ctx{&registry.layout(), params0, nullptr, k, true};
  check_param_gradient(x, [&](const at::Tensor& input) { return norm.forward(ctx, input); });
}

TEST(LayerGradients, GroupedConvAndLinear) {
  Registry registry;
  Conv2d conv(registry, "conv", Conv2dOptions{2, 3, 3}.with_padding(1).with_bias(true));
  Linear linear(registry, "fc", 3 * 4 * 4, 2);
  const std::int64_t k = 2;
  const at::Tensor x = torch::randn({2, k * 2, 4, 4}, torch::kDouble);
  const at::Tensor params0 = torch::randn({k, registry.layout().total_numel}, torch::kDouble);
  check_param_gradient(params0, [&](const at::Tensor& p) {
    Context ctx{&registry.layout(), p, nullptr, k, true};
    const at::Tensor h = conv.forward(ctx, x);                       // [b, k*3, 4, 4]
    const at::Tensor nodes = h.reshape({2, k, -1}).transpose(0, 1);  // [k, b, 48]
    return linear.forward(ctx, nodes);
  });
}

}  // namespace
}  // namespace lpdt::nn
