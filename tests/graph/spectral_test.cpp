#include "lpdt/graph/spectral.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <numbers>

#include "lpdt/core/error.h"
#include "lpdt/graph/builders.h"
#include "lpdt/graph/factory.h"

namespace lpdt::graph {
namespace {

// LAPACK eigenvalues of a small matrix are accurate to a few ulps of its norm (1).
constexpr double kEigenTolerance = 1e-10;

TEST(SpectralTest, DirectedRingOfEightMatchesCosPiOverEight) {
  // W = (I + P) / 2: eigenvalues 1/2 + 1/2 e^{2 pi i k / 8}, |lambda_2| = cos(pi / 8).
  const SpectralInfo info = spectral_info(directed_ring(8));
  EXPECT_NEAR(info.lambda2_modulus, std::cos(std::numbers::pi / 8), kEigenTolerance);
  EXPECT_NEAR(info.lambda2_modulus, 0.92387953251128674, kEigenTolerance);
  EXPECT_NEAR(info.spectral_gap, 1.0 - std::cos(std::numbers::pi / 8), kEigenTolerance);
  // W is normal (circulant), so sigma_2 = |lambda_2|.
  ASSERT_TRUE(info.sigma2.has_value());
  EXPECT_NEAR(*info.sigma2, std::cos(std::numbers::pi / 8), kEigenTolerance);
  for (std::int64_t n : {3, 5, 16, 33}) {
    EXPECT_NEAR(spectral_info(directed_ring(n)).lambda2_modulus, std::cos(std::numbers::pi / n),
                kEigenTolerance)
        << n;
  }
}

TEST(SpectralTest, EigenvalueModuliOfTheDirectedRing) {
  const at::Tensor moduli = eigenvalue_moduli(directed_ring(8).mixing_matrix());
  ASSERT_EQ(moduli.size(0), 8);
  // |1/2 + 1/2 e^{i theta}| = |cos(theta / 2)|, theta = 2 pi k / 8: sorted 1, c1, c1, c2, c2, ...
  EXPECT_NEAR(moduli[0].item<double>(), 1.0, kEigenTolerance);
  EXPECT_NEAR(moduli[2].item<double>(), std::cos(std::numbers::pi / 8), kEigenTolerance);
  EXPECT_NEAR(moduli[7].item<double>(), 0.0, kEigenTolerance);
}

TEST(SpectralTest, CompleteGraphHasGapOne) {
  const SpectralInfo info = spectral_info(complete(8));
  EXPECT_NEAR(info.spectral_gap, 1.0, kEigenTolerance);
  EXPECT_NEAR(*info.sigma2, 0.0, kEigenTolerance);
}

TEST(SpectralTest, UndirectedRingAndTorusMatchClosedForms) {
  // Ring, uniform 1/3: eigenvalues (1 + 2 cos(2 pi k / n)) / 3.
  EXPECT_NEAR(spectral_info(ring(8)).lambda2_modulus, (1 + 2 * std::cos(std::numbers::pi / 4)) / 3,
              kEigenTolerance);
  // Torus 4x4, uniform 1/5: eigenvalues (1 + 2 cos(2 pi a / 4) + 2 cos(2 pi b / 4)) / 5, the
  // second largest modulus is 3/5 (a = 1, b = 0 and a = b = 2).
  const SpectralInfo torus_info = spectral_info(torus(4, 4));
  EXPECT_NEAR(torus_info.lambda2_modulus, 0.6, kEigenTolerance);
  EXPECT_NEAR(*torus_info.sigma2, 0.6, kEigenTolerance);  // symmetric: sigma_2 = |lambda_2|
}

TEST(SpectralTest, ExponentialGraphMatchesCirculantEigenvalues) {
  // Circulant W = (I + P + P^2 + P^4) / 4 (n = 8): eigenvalues (1 + w^k + w^2k + w^4k) / 4.
  double expected = 0.0;
  for (int k = 1; k < 8; ++k) {
    const std::complex<double> w = std::polar(1.0, 2 * std::numbers::pi * k / 8);
    expected = std::max(expected, std::abs((1.0 + w + w * w + std::pow(w, 4)) / 4.0));
  }
  EXPECT_NEAR(spectral_info(exponential(8)).lambda2_modulus, expected, kEigenTolerance);
}

TEST(SpectralTest, NonDoublyStochasticHasNoSigma2) {
  const SpectralInfo info = spectral_info(random_digraph(RandomGraphOptions(12, 7)));
  EXPECT_FALSE(info.sigma2.has_value());
  EXPECT_GT(info.spectral_gap, 0.0);
  EXPECT_LT(info.spectral_gap, 1.0);
}

TEST(SpectralTest, OnePeerExponentialAveragesExactlyOverAPeriod) {
  // For n = 2^k the product of one period is (1/n) 1 1^T (Ying et al. 2021): gap 1.
  const PeriodicSchedule schedule = one_peer_exponential(8);
  const at::Tensor product = period_product(schedule);
  EXPECT_TRUE(at::allclose(product, at::full({8, 8}, 0.125, product.options()), 0.0, 1e-15));
  EXPECT_NEAR(spectral_gap(schedule), 1.0, kEigenTolerance);
  // Each step alone is not strongly connected: lambda_2 = 1, gap 0.
  EXPECT_NEAR(spectral_gap(schedule.at(1)), 0.0, kEigenTolerance);
  // n = 6 is not a power of two: the period product mixes, but not exactly.
  const double gap6 = spectral_gap(one_peer_exponential(6));
  EXPECT_GT(gap6, 0.0);
  EXPECT_LT(gap6, 1.0 - 1e-6);
}

// The general solvers' answers, for comparison with the fast paths: moduli of geev's
// eigenvalues sorted in decreasing order, and sigma_2 from the SVD.
at::Tensor general_moduli(const at::Tensor& w) {
  return std::get<0>(at::linalg_eigvals(w.to(at::kDouble)).abs().sort(0, /*descending=*/true));
}
double general_sigma2(const at::Tensor& w) {
  const std::int64_t n = w.size(0);
  const at::Tensor w64 = w.to(at::kDouble);
  return at::linalg_svdvals(w64 - at::full({n, n}, 1.0 / static_cast<double>(n), w64.options()))[0]
      .item<double>();
}

// Random column-stochastic circulants, non-symmetric: the DFT's eigenvalues and sigma_2 are
// geev's and the SVD's.
TEST(SpectralTest, CirculantEigenvaluesEqualTheGeneralSolvers) {
  at::manual_seed(17);
  for (const std::int64_t n : {2, 3, 7, 16, 33}) {
    at::Tensor c = at::rand({n}, at::kDouble);
    c.mul_(at::rand({n}, at::kDouble).gt(0.5));  // sparse offsets, as graphs have
    c[0] = c[0] + 0.5;                           // a self-loop
    c.div_(c.sum());
    at::Tensor w = at::empty({n, n}, at::kDouble);
    for (std::int64_t j = 0; j < n; ++j) w.select(1, j).copy_(at::roll(c, {j}, {0}));
    ASSERT_TRUE(is_circulant(w)) << n;
    const at::Tensor fast = eigenvalue_moduli(w);
    EXPECT_LT((fast - general_moduli(w)).abs().max().item<double>(), kEigenTolerance) << n;
    const SpectralInfo info = spectral_info(w);
    EXPECT_NEAR(info.lambda2_modulus, general_moduli(w)[1].item<double>(), kEigenTolerance) << n;
    ASSERT_TRUE(info.sigma2.has_value()) << n;
    EXPECT_NEAR(*info.sigma2, general_sigma2(w), kEigenTolerance) << n;
  }
}

// Which mixing matrices take the DFT: the rings, the exponential graph and the complete graph
// are circulant; a torus, a random digraph and a circulant with one weight moved are not. A
// symmetric doubly stochastic W's sigma_2 (|lambda_2|) is the SVD's.
TEST(SpectralTest, CirculantTopologiesAreRecognised) {
  for (const auto& w : {ring(16).mixing_matrix(), directed_ring(16).mixing_matrix(),
                        exponential(16).mixing_matrix(), complete(16).mixing_matrix()}) {
    EXPECT_TRUE(is_circulant(w));
  }
  EXPECT_FALSE(is_circulant(torus(4, 5).mixing_matrix()));
  EXPECT_FALSE(is_circulant(random_digraph(RandomGraphOptions(12, 7)).mixing_matrix()));
  at::Tensor moved = directed_ring(8).mixing_matrix().to(at::kDouble).clone();
  moved[3][3] = moved[3][3] - 0.25;
  moved[4][3] = moved[4][3] + 0.25;  // still column-stochastic, no longer circulant
  EXPECT_FALSE(is_circulant(moved));
  EXPECT_LT((eigenvalue_moduli(moved) - general_moduli(moved)).abs().max().item<double>(),
            kEigenTolerance);
  const at::Tensor torus45 = torus(4, 5).mixing_matrix();
  EXPECT_NEAR(*spectral_info(torus45).sigma2, general_sigma2(torus45), kEigenTolerance);
}

TEST(SpectralTest, SingleNode) {
  const SpectralInfo info = spectral_info(complete(1));
  EXPECT_EQ(info.spectral_gap, 1.0);
  EXPECT_EQ(info.lambda2_modulus, 0.0);
}

// The table of docs/graph.md: degree and spectral gap of every topology for n = 8 and 16.
TEST(SpectralTest, PrintTableForDocs) {
  std::printf(
      "| topology | mixing | n | out-degree | in-degree | 1 - |lambda_2| | 1 - sigma_2 |\n");
  for (const char* name : {"directed-ring", "ring", "torus", "complete", "exponential", "random",
                           "one-peer-exponential"}) {
    for (const char* mixing : {"uniform", "metropolis"}) {
      for (std::int64_t n : {8, 16}) {
        std::unique_ptr<TopologySchedule> schedule;
        try {
          schedule =
              make_topology(TopologyOptions().name(name).num_nodes(n).mixing(mixing).seed(1));
        } catch (const ConfigError&) {
          continue;  // torus of 8 nodes, metropolis on directed graphs
        }
        const Topology& step = schedule->at(0);
        std::int64_t out_min = n, out_max = 0, in_min = n, in_max = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          out_min = std::min(out_min, step.out_degree(i));
          out_max = std::max(out_max, step.out_degree(i));
          in_min = std::min(in_min, step.in_degree(i));
          in_max = std::max(in_max, step.in_degree(i));
        }
        const SpectralInfo info = spectral_info(*schedule);
        char sigma_gap_text[32] = "-";
        if (info.sigma2)
          std::snprintf(sigma_gap_text, sizeof(sigma_gap_text), "%.4f", 1.0 - *info.sigma2);
        const std::string sigma_gap = sigma_gap_text;
        const auto range = [](std::int64_t lo, std::int64_t hi) {
          return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
        };
        std::printf("| %s | %s | %lld | %s | %s | %.4f | %s |\n", schedule->label().c_str(), mixing,
                    static_cast<long long>(n), range(out_min, out_max).c_str(),
                    range(in_min, in_max).c_str(), info.spectral_gap, sigma_gap.c_str());
        EXPECT_GT(info.spectral_gap, 0.0);
      }
    }
  }
}

}  // namespace
}  // namespace lpdt::graph
