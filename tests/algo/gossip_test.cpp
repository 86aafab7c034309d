// Gossip algorithms: batched D-PSGD / DeepSqueeze / Choco against the official per-node equations,
// their reductions to D-PSGD, consensus and push-sum properties.
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "graphs.h"
#include "lpdt/algo/consensus.h"
#include "lpdt/algo/decentralized_optimizer.h"
#include "lpdt/core/error.h"
#include "lpdt/metrics/byte_ledger.h"
#include "reference_loop.h"

namespace lpdt::algo {
namespace {

using testing::irregular_directed;
using testing::small_layout;
using testing::undirected_ring;

// Float32 batched vs double reference over tens of iterations of O(1) values.
constexpr double kLoopTolerance = 2e-5;
// Two float32 implementations of the same trajectory (brief: within 1e-6).
constexpr double kSameTrajectoryTolerance = 1e-6;

double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

struct Case {
  const char* name;
  const char* algorithm;
  const char* compressor;
  double keep;
  bool nesterov;
  double eta;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class MatchesReferenceLoop : public ::testing::TestWithParam<Case> {};

// Quadratic local losses f_i(x) = |x - t_i|^2 / 2: grad = x - t_i, taken at the de-biased x.
TEST_P(MatchesReferenceLoop, OnDirectedIrregularGraph) {
  const Case c = GetParam();
  const auto layout = small_layout();
  const auto w = irregular_directed();
  const std::int64_t n = w.size(0);
  torch::manual_seed(42);
  auto x = torch::randn({n, layout.total_numel});
  const auto targets = torch::randn({n, layout.total_numel}) * 2;

  DecentralizedOptimizer opt(
      DecentralizedOptions()
          .algorithm(c.algorithm)
          .compressor(compress::CompressorOptions().name(c.compressor).keep_fraction(c.keep))
          .eta(c.eta)
          .momentum(0.9)
          .nesterov(c.nesterov)
          .weight_decay(1e-3),
      n, layout);
  testing::ReferenceConfig rc;
  rc.algorithm = parse_algorithm(c.algorithm) == Algorithm::kChoco         ? "choco"
                 : parse_algorithm(c.algorithm) == Algorithm::kDeepSqueeze ? "deepsqueeze"
                                                                           : "dpsgd";
  rc.identity = std::string(c.compressor) == "none";
  rc.keep = c.keep;
  rc.eta = c.eta;
  rc.nesterov = c.nesterov;
  rc.weight_decay = 1e-3;
  testing::ReferenceLoop ref(rc, layout, x);
  auto ledger = opt.make_ledger();
  for (int t = 0; t < 40; ++t) {
    const double lr = 0.05;
    const auto grad = x - targets;
    const auto grad_ref = ref.x().to(torch::kFloat) - targets;
    opt.step(x, grad, w, lr, t, ledger);
    ref.step(grad_ref, w, lr);
    ASSERT_LT(max_abs_diff(x, ref.x()), kLoopTolerance) << c.name << " iteration " << t;
    ASSERT_LT(max_abs_diff(opt.push_sum_weights(), ref.ps()), kLoopTolerance) << c.name;
  }
  // Push-sum weights really moved (the graph is not doubly stochastic).
  EXPECT_GT(max_abs_diff(opt.push_sum_weights(), torch::ones({n})), 0.05);
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, MatchesReferenceLoop,
    ::testing::Values(Case{"dpsgd", "dpsgd", "none", 1.0, true, 1.0},
                      Case{"dpsgd_eta", "d-psgd", "none", 1.0, true, 0.4},
                      Case{"ds_identity", "deepsqueeze", "none", 1.0, true, 0.5},
                      Case{"ds_topk", "sparse-push", "topk", 0.3, true, 0.5},
                      Case{"ds_topk_heavy", "deepsqueeze", "topk", 0.1, false, 0.2},
                      Case{"choco_identity", "choco", "none", 1.0, true, 0.5},
                      Case{"choco_topk", "quant-sgp", "topk", 0.3, true, 0.5},
                      Case{"choco_topk_heavy", "choco", "topk", 0.1, false, 0.2}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// Choco and DeepSqueeze with the identity compressor are D-PSGD (spec 5.2, 5.3).
TEST(IdentityCompressor, ChocoAndDeepSqueezeReduceToDpsgd) {
  const auto layout = small_layout();
  for (const auto& w : {irregular_directed(), undirected_ring(5)}) {
    const std::int64_t n = w.size(0);
    torch::manual_seed(3);
    const auto x0 = torch::randn({n, layout.total_numel});
    const auto targets = torch::randn({n, layout.total_numel});
    const auto make = [&](const char* algorithm) {
      return DecentralizedOptimizer(
          DecentralizedOptions().algorithm(algorithm).eta(0.6).momentum(0.9).weight_decay(1e-4), n,
          layout);
    };
    auto dpsgd = make("dpsgd");
    auto ds = make("deepsqueeze");
    auto choco = make("choco");
    auto xd = x0.clone(), xs = x0.clone(), xc = x0.clone();
    auto ld = dpsgd.make_ledger(), ls = ds.make_ledger(), lc = choco.make_ledger();
    for (int t = 0; t < 300; ++t) {
      dpsgd.step(xd, xd - targets, w, 0.05, t, ld);
      ds.step(xs, xs - targets, w, 0.05, t, ls);
      choco.step(xc, xc - targets, w, 0.05, t, lc);
      ASSERT_LT(max_abs_diff(xs, xd), kSameTrajectoryTolerance) << "deepsqueeze, round " << t;
      ASSERT_LT(max_abs_diff(xc, xd), kSameTrajectoryTolerance) << "choco, round " << t;
    }
    // DeepSqueeze's error feedback stays exactly zero with the identity.
    EXPECT_EQ(ds.state().at("error_feedback").abs().max().item<float>(), 0.0f);
  }
}

// Gossip-only rounds (zero gradient, no momentum, no weight decay) with a doubly stochastic W
// converge to the initial mean, which every round preserves.
TEST(Consensus, DoublyStochasticGossipConvergesToMean) {
  const auto layout = small_layout();
  // Weights 1/2 (self) and 1/4 (each neighbour) are exact in float32, so W is exactly doubly
  // stochastic and the mean is preserved up to the rounding of each product. (With 1/3 the float
  // column sums are 1 + 3e-8 and the mean drifts by ~1e-5 over 400 rounds.)
  auto w = torch::zeros({8, 8});
  for (std::int64_t j = 0; j < 8; ++j) {
    w[j][j] = 0.5;
    w[(j + 1) % 8][j] = 0.25;
    w[(j + 7) % 8][j] = 0.25;
  }
  torch::manual_seed(5);
  auto x = torch::randn({8, layout.total_numel});
  const auto mean0 = x.mean(0, true);
  DecentralizedOptimizer opt(DecentralizedOptions().algorithm("dpsgd").momentum(0).weight_decay(0),
                             8, layout);
  auto ledger = opt.make_ledger();
  const auto zero = torch::zeros_like(x);
  const double d0 = consensus_distance(x);
  for (int t = 0; t < 400; ++t) opt.step(x, zero, w, 0.1, t, ledger);
  EXPECT_LT(consensus_distance(x), 1e-10 * d0);
  EXPECT_LT(max_abs_diff(x, mean0.expand_as(x)), 1e-5);
  EXPECT_LT(max_abs_diff(opt.push_sum_weights(), torch::ones({8})), 1e-6);  // ps stays 1
}

// Push-sum (SGP): on a directed irregular column-stochastic W the de-biased x converge to the
// initial average; the same mixing without the push-sum correction does not.
TEST(PushSum, RecoversExactAverageOnDirectedGraph) {
  const auto layout = small_layout();
  const auto w = irregular_directed();
  torch::manual_seed(6);
  const auto x0 = torch::randn({5, layout.total_numel});
  const auto mean0 = x0.mean(0, true).expand_as(x0);
  for (const char* algorithm : {"dpsgd", "deepsqueeze", "choco"}) {
    SCOPED_TRACE(algorithm);
    auto x = x0.clone();
    DecentralizedOptimizer opt(DecentralizedOptions().algorithm(algorithm).eta(0.7), 5, layout);
    auto ledger = opt.make_ledger();
    for (int t = 0; t < 300; ++t) opt.gossip_round(x, w, t, ledger);
    EXPECT_LT(max_abs_diff(x, mean0), 1e-5);
    // Sum of ps is preserved (= n) and the weights are far from 1.
    EXPECT_NEAR(opt.push_sum_weights().sum().item<float>(), 5.0f, 1e-5);
    EXPECT_GT(max_abs_diff(opt.push_sum_weights(), torch::ones({5})), 0.1);
  }
  // Uncorrected: x <- W x converges to n pi_i * mean (pi the Perron vector of W, which is also
  // where ps goes): no consensus, and not the average.
  auto z = x0.clone();
  auto ps = torch::ones({5, 1});
  for (int t = 0; t < 300; ++t) {
    z = torch::mm(w, z);
    ps = torch::mm(w, ps);
  }
  EXPECT_GT(consensus_distance(z), 1e-2);
  EXPECT_GT(max_abs_diff(z, mean0), 1e-2);
  EXPECT_LT(max_abs_diff(z, ps * mean0), 1e-5);
}

// Choco with top-k (keep 0.1) and a small consensus step still reaches consensus on the mean
// (Koloskova et al. 2019, Thm. 2: linear convergence of Choco-Gossip for any compression).
TEST(Consensus, ChocoTopKReachesMean) {
  const auto layout = small_layout();
  for (const auto& w : {undirected_ring(8), irregular_directed()}) {
    const std::int64_t n = w.size(0);
    torch::manual_seed(8);
    auto x = torch::randn({n, layout.total_numel});
    const auto mean0 = x.mean(0, true).expand_as(x);
    DecentralizedOptimizer opt(
        DecentralizedOptions()
            .algorithm("choco")
            .compressor(compress::CompressorOptions().name("topk").keep_fraction(0.1))
            .eta(0.1),
        n, layout);
    auto ledger = opt.make_ledger();
    for (int t = 0; t < 3000; ++t) opt.gossip_round(x, w, t, ledger);
    EXPECT_LT(max_abs_diff(x, mean0), 1e-4) << "n = " << n;
  }
}

// 8-bit messages (docs/wire.md): Choco's public copies absorb the rounding error, so gossip
// still reaches the exact mean (the quantizer's error shrinks with the differences it encodes);
// DeepSqueeze's error feedback keeps the network average exact and the nodes close to it.
TEST(Consensus, Int8MessagesStillReachTheMean) {
  const auto layout = small_layout();
  for (const auto& w : {undirected_ring(8), irregular_directed()}) {
    const std::int64_t n = w.size(0);
    for (const char* sparsifier : {"none", "topk"}) {
      SCOPED_TRACE(std::string(sparsifier) + " n = " + std::to_string(n));
      torch::manual_seed(8);
      const auto x0 = torch::randn({n, layout.total_numel});
      const auto mean0 = x0.mean(0, true).expand_as(x0);
      const auto options =
          compress::CompressorOptions()
              .name(sparsifier)
              .keep_fraction(std::string(sparsifier) == "none" ? 1.0 : 0.1)
              .values(compress::MessageValues::kInt8);
      DecentralizedOptimizer choco(DecentralizedOptions().algorithm("choco").compressor(options).eta(0.1),
                                   n, layout);
      auto x = x0.clone();
      auto ledger = choco.make_ledger();
      for (int t = 0; t < 3000; ++t) choco.gossip_round(x, w, t, ledger);
      EXPECT_LT(max_abs_diff(x, mean0), 1e-4);

      // DeepSqueeze with the same sparsifier and float32 messages, for comparison: its
      // compression error is fed back, not removed, so it stops at a neighbourhood of consensus
      // that depends on the graph; 8-bit values must not move it much further.
      auto squeeze = [&](compress::MessageValues values) {
        DecentralizedOptimizer opt(DecentralizedOptions()
                                       .algorithm("deepsqueeze")
                                       .compressor(compress::CompressorOptions(options).values(values))
                                       .eta(0.1),
                                   n, layout);
        auto y = x0.clone();
        auto ledger = opt.make_ledger();
        for (int t = 0; t < 3000; ++t) opt.gossip_round(y, w, t, ledger);
        // The push-sum numerators' sum is preserved: sum_i ps_i x_i = sum_i x0_i.
        const auto ps = opt.push_sum_weights().unsqueeze(1);
        EXPECT_LT(max_abs_diff((y * ps).sum(0), x0.sum(0)), 1e-3);
        return consensus_distance(y);
      };
      const double d0 = consensus_distance(x0);
      const double d_fp32 = squeeze(compress::MessageValues::kFloat32);
      const double d_int8 = squeeze(compress::MessageValues::kInt8);
      // Measured: dense 7e-11 (fp32) vs 2e-6 (int8) of d0 = 62; top-10% 0.33 vs 0.32.
      EXPECT_LT(d_int8, 1.5 * d_fp32 + 1e-6 * d0);
      EXPECT_LT(d_int8, 0.02 * d0);
    }
  }
}

// The CPU product runs sparse; it must equal the dense product z + L m.
TEST(ConsensusStep, SparseProductEqualsDense) {
  torch::manual_seed(10);
  for (const auto& w : {irregular_directed(), undirected_ring(7), torch::full({4, 4}, 0.25f)}) {
    const std::int64_t n = w.size(0);
    const ConsensusStep step(w, 0.3);
    EXPECT_TRUE(torch::allclose(step.matrix(), (w - torch::eye(n)) * 0.3));
    const auto m = torch::randn({n, 1000});
    auto z = torch::randn({n, 1000});
    const auto expected =
        z.to(torch::kDouble) + torch::mm(step.matrix().to(torch::kDouble), m.to(torch::kDouble));
    auto z2 = z.clone();
    step.add_product(z, m);
    EXPECT_LT(max_abs_diff(z, expected), 1e-6);
    const auto expected_self =
        z2.to(torch::kDouble) + torch::mm(step.matrix().to(torch::kDouble), z2.to(torch::kDouble));
    step.add_self_product(z2);
    EXPECT_LT(max_abs_diff(z2, expected_self), 1e-6);
  }
}

TEST(Consensus, DistanceHelper) {
  const auto x = torch::tensor({1.0f, 2.0f, 3.0f, 6.0f}).reshape({2, 2});
  // mean (2, 4); distances 1 + 4 = 5 for both rows.
  EXPECT_DOUBLE_EQ(consensus_distance(x), 5.0);
  EXPECT_DOUBLE_EQ(consensus_distance(torch::ones({3, 7})), 0.0);
}

// Choco's x-hat starting at the model: the first gossip round is a full D-PSGD round whatever
// the compressor, since q = C(z - z0) = 0; starting at zero it is not.
TEST(Choco, XhatInitModel) {
  const auto layout = small_layout();
  const auto w = undirected_ring(4);
  torch::manual_seed(9);
  const auto x0 = torch::randn({4, layout.total_numel});
  const auto topk = compress::CompressorOptions().name("topk").keep_fraction(0.1);
  DecentralizedOptimizer model_init(
      DecentralizedOptions().algorithm("choco").compressor(topk).eta(0.5).xhat_init("model"), 4,
      layout);
  DecentralizedOptimizer zero_init(
      DecentralizedOptions().algorithm("choco").compressor(topk).eta(0.5), 4, layout);
  DecentralizedOptimizer dpsgd(DecentralizedOptions().algorithm("dpsgd").eta(0.5), 4, layout);
  auto a = x0.clone(), b = x0.clone(), c = x0.clone();
  auto la = model_init.make_ledger(), lb = zero_init.make_ledger(), lc = dpsgd.make_ledger();
  model_init.gossip_round(a, w, 0, la);
  zero_init.gossip_round(b, w, 0, lb);
  dpsgd.gossip_round(c, w, 0, lc);
  EXPECT_LT(max_abs_diff(a, c), 1e-6);
  EXPECT_GT(max_abs_diff(b, c), 0.1);
  EXPECT_TRUE(torch::equal(model_init.state().at("xhat"), x0));
  EXPECT_THROW(DecentralizedOptimizer(DecentralizedOptions().xhat_init("random"), 4, layout),
               ConfigError);
}

}  // namespace
}  // namespace lpdt::algo
