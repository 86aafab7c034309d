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
