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

// A circulant W's eigenvalues [n] complex128 (the DFT of its first column), or undefined.
at::Tensor circulant_eigenvalues(const at::Tensor& w64) {
  if (!is_circulant(w64)) return at::Tensor();
  return at::fft_fft(w64.select(1, 0).to(at::kComplexDouble));
}

at::Tensor sorted_descending(const at::Tensor& moduli) {
  return std::get<0>(moduli.to(at::kDouble).sort(/*dim=*/0, /*descending=*/true));
}

}  // namespace

bool is_circulant(const at::Tensor& w) {
  LPDT_CHECK(w.dim() == 2 && w.size(0) == w.size(1), "is_circulant needs a square matrix");
  if (w.size(0) < 2) return true;
  // W_{i+1, j+1} = W_ij for all i, j (indices mod n): W equals itself shifted down and right.
  const at::Tensor shifted = at::roll(w, {1, 1}, {0, 1});
  return (w - shifted).abs().max().item<double>() <= kCirculantTolerance;
}

at::Tensor eigenvalue_moduli(const at::Tensor& w) {
  LPDT_CHECK(w.dim() == 2 && w.size(0) == w.size(1), "eigenvalue_moduli needs a square matrix");
  const at::Tensor w64 = w.to(at::kCPU, at::kDouble).contiguous();
  if (const at::Tensor lambdas = circulant_eigenvalues(w64); lambdas.defined()) {
    return sorted_descending(lambdas.abs());
  }
  // Symmetric: real eigenvalues from the symmetric solver (more accurate, no complex pairs).
  return sorted_descending(symmetric(w64) ? at::linalg_eigvalsh(w64).abs()
                                          : at::linalg_eigvals(w64).abs());
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
  const at::Tensor lambdas = circulant_eigenvalues(w64);
  const bool is_symmetric = !lambdas.defined() && symmetric(w64);
  const at::Tensor moduli =
      lambdas.defined() ? sorted_descending(lambdas.abs())
                        : sorted_descending(is_symmetric ? at::linalg_eigvalsh(w64).abs()
                                                         : at::linalg_eigvals(w64).abs());
  info.lambda2_modulus = moduli[1].item<double>();
  info.spectral_gap = 1.0 - info.lambda2_modulus;
  if (!doubly_stochastic(w64)) return info;
  if (lambdas.defined()) {
    // A circulant is normal, and so is W - (1/n) 1 1^T (both are diagonal in the Fourier
    // basis, the averaging matrix with eigenvalue 1 at k = 0): its singular values are the
    // moduli of lambda_0 - 1 and of lambda_k, k >= 1.
    const at::Tensor shifted = lambdas.clone();
    shifted[0] = shifted[0] - 1.0;
    info.sigma2 = shifted.abs().max().item<double>();
  } else if (is_symmetric) {
    // Symmetric and doubly stochastic: 1 / sqrt(n) is an eigenvector of eigenvalue 1 and the
    // others are orthogonal to it, so sigma_2 is the second largest eigenvalue modulus.
    info.sigma2 = info.lambda2_modulus;
  } else {
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
