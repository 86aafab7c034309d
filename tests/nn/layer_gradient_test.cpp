// Layers against central finite differences, in float64.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "lpdt/nn/batch_norm.h"
#include "lpdt/nn/conv2d.h"
#include "lpdt/nn/evonorm.h"
#include "lpdt/nn/linear.h"

namespace lpdt::nn {
namespace {

constexpr double kStep = 1e-6;
constexpr double kRelTolerance = 1e-5;

// Checks d(sum(w * f(params)))/d(params) against finite differences on every coordinate.
template <typename F>
void check_param_gradient(const at::Tensor& params0, F f) {
  torch::manual_seed(3);
  const at::Tensor probe = torch::randn_like(f(params0));
  at::Tensor params = params0.clone().requires_grad_(true);
  (f(params) * probe).sum().backward();
  const at::Tensor grad = params.grad().flatten();
  at::Tensor flat = params0.clone().flatten();
  for (std::int64_t i = 0; i < flat.numel(); ++i) {
    at::Tensor plus = flat.clone(), minus = flat.clone();
    plus[i] += kStep;
    minus[i] -= kStep;
    const double numeric = ((f(plus.view_as(params0)) * probe).sum().template item<double>() -
                            (f(minus.view_as(params0)) * probe).sum().template item<double>()) /
                           (2 * kStep);
    EXPECT_NEAR(grad[i].item<double>(), numeric, kRelTolerance * (1.0 + std::abs(numeric)))
        << "coordinate " << i;
  }
}

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
