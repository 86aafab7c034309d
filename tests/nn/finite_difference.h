#pragma once
// Central finite differences, in float64, shared by the layer tests.
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

namespace lpdt::nn::testing {

constexpr double kFiniteDifferenceStep = 1e-6;
constexpr double kFiniteDifferenceTolerance = 1e-5;  // relative to 1 + |numeric|

// Checks d(sum(probe * f(params)))/d(params) against finite differences on every coordinate.
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
    plus[i] += kFiniteDifferenceStep;
    minus[i] -= kFiniteDifferenceStep;
    const double numeric = ((f(plus.view_as(params0)) * probe).sum().template item<double>() -
                            (f(minus.view_as(params0)) * probe).sum().template item<double>()) /
                           (2 * kFiniteDifferenceStep);
    EXPECT_NEAR(grad[i].item<double>(), numeric,
                kFiniteDifferenceTolerance * (1.0 + std::abs(numeric)))
        << "coordinate " << i;
  }
}

}  // namespace lpdt::nn::testing
