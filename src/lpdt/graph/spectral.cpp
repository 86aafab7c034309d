#include "lpdt/graph/spectral.h"

#include <ATen/ATen.h>

#include <cmath>

#include "lpdt/core/error.h"
#include "lpdt/graph/topology.h"

namespace lpdt::graph {
namespace {

bool symmetric(const at::Tensor& w) {
  return (w - w.t()).abs().max().item<double>() <= kStochasticTolerance;
}

bool doubly_stochastic(const at::Tensor& w) {
  const at::Tensor ones = at::ones({w.size(0)}, w.options());
  return (w.sum(0) - ones).abs().max().item<double>() <= kStochasticTolerance &&
         (w.sum(1) - ones).abs().max().item<double>() <= kStochasticTolerance;
}

}  // namespace

at::Tensor eigenvalue_moduli(const at::Tensor& w) {
  LPDT_CHECK(w.dim() == 2 && w.size(0) == w.size(1), "eigenvalue_moduli needs a square matrix");
  const at::Tensor w64 = w.to(at::kCPU, at::kDouble).contiguous();
  // Symmetric: real eigenvalues from the symmetric solver (more accurate, no complex pairs).
  const at::Tensor moduli =
      symmetric(w64) ? at::linalg_eigvalsh(w64).abs() : at::linalg_eigvals(w64).abs();
  return std::get<0>(moduli.to(at::kDouble).sort(/*dim=*/0, /*descending=*/true));
}

SpectralInfo spectral_info(const at::Tensor& w) {
  const at::Tensor w64 = w.to(at::kCPU, at::kDouble).contiguous();
  const std::int64_t n = w64.size(0);
  SpectralInfo info;
  if (n == 1) {
    info.sigma2 = 0.0;
    return info;
  }
  // The largest modulus is the Perron eigenvalue 1 (W column-stochastic); the next one decides
  // the consensus rate.
  info.lambda2_modulus = eigenvalue_moduli(w64)[1].item<double>();
  info.spectral_gap = 1.0 - info.lambda2_modulus;
  if (doubly_stochastic(w64)) {
    const at::Tensor averaging = at::full({n, n}, 1.0 / static_cast<double>(n), w64.options());
    info.sigma2 = at::linalg_svdvals(w64 - averaging)[0].item<double>();
  }
  return info;
}

SpectralInfo spectral_info(const Topology& topology) {
  return spectral_info(topology.mixing_matrix(at::kDouble));
}

SpectralInfo spectral_info(const TopologySchedule& schedule) {
  return spectral_info(period_product(schedule));
}

double spectral_gap(const Topology& topology) { return spectral_info(topology).spectral_gap; }

double spectral_gap(const TopologySchedule& schedule) {
  return spectral_info(schedule).spectral_gap;
}

at::Tensor period_product(const TopologySchedule& schedule) {
  at::Tensor product = schedule.at(0).mixing_matrix(at::kDouble);
  for (std::int64_t t = 1; t < schedule.period(); ++t) {
    product = at::matmul(schedule.at(t).mixing_matrix(at::kDouble), product);
  }
  return product;
}

}  // namespace lpdt::graph
