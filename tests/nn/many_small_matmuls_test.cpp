// nn/many_small_matmuls.h against at::bmm: products and both gradients, for batch counts that do
// and do not divide evenly over the threads.
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "lpdt/nn/many_small_matmuls.h"

namespace lpdt::nn {
namespace {

TEST(ManySmallMatmuls, MatchesBmmAndItsGradients) {
  torch::manual_seed(1);
  for (std::int64_t count : {1, 7, 128}) {
    SCOPED_TRACE(count);
    const at::Tensor a0 = torch::randn({count, 5, 3}, at::kDouble);
    const at::Tensor b0 = torch::randn({count, 3, 4}, at::kDouble);
    const at::Tensor probe = torch::randn({count, 5, 4}, at::kDouble);
    at::Tensor a = a0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
    at::Tensor ra = a0.clone().requires_grad_(true), rb = b0.clone().requires_grad_(true);
    const at::Tensor out = many_small_matmuls(a, b);
    const at::Tensor expected = at::bmm(ra, rb);
    EXPECT_TRUE(torch::allclose(out, expected, 1e-12, 1e-12));
    (out * probe).sum().backward();
    (expected * probe).sum().backward();
    EXPECT_TRUE(torch::allclose(a.grad(), ra.grad(), 1e-12, 1e-12));
    EXPECT_TRUE(torch::allclose(b.grad(), rb.grad(), 1e-12, 1e-12));
  }
}

}  // namespace
}  // namespace lpdt::nn
