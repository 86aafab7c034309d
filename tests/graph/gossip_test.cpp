// Gossip on the built topologies: plain averaging x <- W x with doubly stochastic W, and push-sum
// (Kempe et al. 2003) on an irregular digraph where plain averaging is biased.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "lpdt/core/rng.h"
#include "lpdt/graph/builders.h"

namespace lpdt::graph {
namespace {

constexpr double kConsensusTolerance = 1e-9;
constexpr int kMaxRounds = 5000;

// [n, d] float64, uniform in [-1, 1) from a test stream.
at::Tensor random_values(std::int64_t n, std::int64_t d, std::uint64_t seed) {
  Rng rng = Rng::stream(seed, 0, StreamPurpose::kTest);
  at::Tensor x = at::empty({n, d}, at::kDouble);
  double* data = x.data_ptr<double>();
  for (std::int64_t k = 0; k < n * d; ++k) data[k] = 2.0 * rng.uniform() - 1.0;
  return x;
}

double max_deviation(const at::Tensor& x, const at::Tensor& target) {
  return (x - target).abs().max().item<double>();
}

// Rounds of x <- W_t x until every node is within kConsensusTolerance of the mean of x0;
// returns the number of rounds, or -1.
int rounds_to_consensus(const TopologySchedule& schedule, const at::Tensor& x0) {
  const at::Tensor mean = x0.mean(0, /*keepdim=*/true);
  at::Tensor x = x0.clone();
  for (int t = 0; t < kMaxRounds; ++t) {
    if (max_deviation(x, mean) < kConsensusTolerance) return t;
    x = at::matmul(schedule.at(t).mixing_matrix(), x);
    // Column-stochastic W keeps the sum (hence the mean) at every step.
    EXPECT_LT(max_deviation(x.mean(0, true), mean), 1e-12);
  }
  return -1;
}

TEST(GossipTest, DoublyStochasticGossipConvergesToTheMean) {
  const at::Tensor x0 = random_values(16, 5, 1);
  const int torus_rounds = rounds_to_consensus(torus(4, 4, MixingRule::kMetropolis), x0);
  EXPECT_GT(torus_rounds, 0);
  EXPECT_LT(torus_rounds, 100);  // |lambda_2| = 0.6: 0.6^t * 2 < 1e-9 near t = 42
  const int ring_rounds = rounds_to_consensus(directed_ring(16), x0);
  EXPECT_GT(ring_rounds, torus_rounds);  // cos(pi / 16) = 0.98: slow
  EXPECT_GT(ring_rounds, 0);
  // Time-varying one-peer exponential graph: exact after one period (3 steps + rounding).
  EXPECT_LE(rounds_to_consensus(one_peer_exponential(16), x0), 4);
}

TEST(GossipTest, PushSumRecoversTheAverageOnAnIrregularDigraph) {
  const Topology t = random_digraph(RandomGraphOptions(16, 7));
  ASSERT_FALSE(t.is_doubly_stochastic());
  const at::Tensor w_matrix = t.mixing_matrix();
  const at::Tensor x0 = random_values(16, 3, 2);
  const at::Tensor mean = x0.mean(0, /*keepdim=*/true);

  // Push-sum: z <- W z, w <- W w, x = z / w. Both sums are invariant under column-stochastic W,
  // and z and w converge to the same Perron direction, so z / w -> sum(x0) / n.
  at::Tensor z = x0.clone();
  at::Tensor w = at::ones({16, 1}, at::kDouble);
  at::Tensor plain = x0.clone();
  for (int round = 0; round < 1000; ++round) {
    z = at::matmul(w_matrix, z);
    w = at::matmul(w_matrix, w);
    plain = at::matmul(w_matrix, plain);
  }
  EXPECT_LT(max_deviation(z / w, mean), kConsensusTolerance);
  // Plain gossip converges to v * sum(x0) with v the (non-uniform) Perron vector: nodes end far
  // from the mean and even from each other.
  EXPECT_GT(max_deviation(plain, mean), 1e-2);
  // The push-sum weights themselves are irregular (n * v), not all 1.
  EXPECT_GT((w - 1.0).abs().max().item<double>(), 1e-2);
}

}  // namespace
}  // namespace lpdt::graph
