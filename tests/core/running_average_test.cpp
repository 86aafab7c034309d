// The running average's update (core/running_average.h) against its equation with each rounding
// spelled out, for contiguous and strided running values, and its independence of how many
// nodes' values are moved at once (LibTorch's mul_/add_ fused the multiply-add at some lengths).
#include "lpdt/core/running_average.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <cstdint>

namespace lpdt {
namespace {

// running * (1 - m) and m * value each rounded to the values' type, then their sum rounded.
at::Tensor expected_update(const at::Tensor& running, const at::Tensor& value, double m) {
  // A double scalar times a float32 tensor is computed in float32 with the scalar rounded to it.
  const double keep = running.scalar_type() == at::kFloat
                          ? static_cast<double>(static_cast<float>(1.0 - m))
                          : 1.0 - m;
  const double take =
      running.scalar_type() == at::kFloat ? static_cast<double>(static_cast<float>(m)) : m;
  const at::Tensor kept = running * keep;
  const at::Tensor moved = value.reshape(running.sizes()) * take;
  return kept + moved;
}

TEST(RunningAverage, MovesTowardTheValueWithSeparateRoundings) {
  torch::manual_seed(17);
  for (const auto dtype : {torch::kFloat, torch::kDouble}) {
    for (const std::int64_t n : {std::int64_t{1}, std::int64_t{7}, std::int64_t{16},
                                 std::int64_t{48}, std::int64_t{1000}}) {
      const at::Tensor before = torch::randn({n}, dtype) * 3.0, value = torch::randn({n}, dtype);
      at::Tensor running = before.clone();
      move_running_average(running, value, 0.1);
      EXPECT_TRUE(at::equal(running, expected_update(before, value, 0.1))) << "n = " << n;
      EXPECT_TRUE(at::allclose(running, before * 0.9 + value * 0.1, 1e-6, 1e-6)) << "n = " << n;
    }
  }
}

TEST(RunningAverage, UpdatesStridedAndMultiDimensionalValuesInPlace) {
  torch::manual_seed(18);
  // A column of [k, P] (running ranges kept as parameters): stride P.
  const at::Tensor storage = torch::randn({5, 4});
  const at::Tensor column_before = storage.select(1, 2).clone();
  const at::Tensor other_columns = storage.index_select(1, torch::tensor({0, 1, 3})).clone();
  const at::Tensor value = torch::randn({5});
  move_running_average(storage.select(1, 2), value, 0.25);
  EXPECT_TRUE(at::equal(storage.select(1, 2), expected_update(column_before, value, 0.25)));
  EXPECT_TRUE(at::equal(storage.index_select(1, torch::tensor({0, 1, 3})), other_columns));
  // [k, C] buffers moved by a [k * C] measurement (Range BatchNorm).
  const at::Tensor buffer_before = torch::randn({3, 16});
  at::Tensor buffer = buffer_before.clone();
  const at::Tensor flat_value = torch::randn({48});
  move_running_average(buffer, flat_value, 0.1);
  EXPECT_TRUE(at::equal(buffer, expected_update(buffer_before, flat_value, 0.1)));
}

// A node's running values are the same whether it is moved alone or with other nodes.
TEST(RunningAverage, ANodesValuesDoNotDependOnTheNodesMovedWithIt) {
  torch::manual_seed(19);
  const std::int64_t k = 3, channels = 16;
  const at::Tensor before = torch::randn({k, channels}), value = torch::randn({k, channels});
  at::Tensor together = before.clone();
  move_running_average(together, value, 0.1);
  for (std::int64_t node = 0; node < k; ++node) {
    at::Tensor alone = before[node].clone();
    move_running_average(alone, value[node], 0.1);
    EXPECT_TRUE(at::equal(alone, together[node])) << "node " << node;
  }
}

TEST(RunningAverage, RefusesMismatchedOrNonFloatValues) {
  at::Tensor running = torch::zeros({4});
  EXPECT_THROW(move_running_average(running, torch::zeros({3}), 0.1), std::exception);
  EXPECT_THROW(move_running_average(running, torch::zeros({4}, torch::kDouble), 0.1),
               std::exception);
  at::Tensor non_contiguous_2d = torch::zeros({4, 6}).t();
  EXPECT_THROW(move_running_average(non_contiguous_2d, torch::zeros({24}), 0.1), std::exception);
}

}  // namespace
}  // namespace lpdt
