#pragma once
// Spectral analysis of mixing matrices (docs/graph.md).
//
// The spectral gap reported everywhere is 1 - |lambda_2(W)|, lambda_2 the eigenvalue of second
// largest modulus of W (W may be non-symmetric; eigenvalues from LAPACK geev through
// at::linalg_eigvals on float64, or syevd through at::linalg_eigvalsh when W is symmetric).
// With self-loops and strong connectivity W is primitive, so |lambda_2| < 1 and consensus error
// decays asymptotically like |lambda_2|^t. For doubly stochastic W we also report
// sigma_2 = ||W - (1/n) 1 1^T||_2, which bounds every single step:
// ||W x - mean(x) 1|| <= sigma_2 ||x - mean(x) 1|| (equal to |lambda_2| when W is symmetric).
// For a time-varying schedule the gap is that of the product over one period,
// W_{p-1} ... W_1 W_0 (per period, not per step).
#include <ATen/core/Tensor.h>

#include <optional>

namespace lpdt::graph {

class Topology;
class TopologySchedule;

struct SpectralInfo {
  double lambda2_modulus = 0.0;  // |lambda_2(W)|; 0 for a single node
  double spectral_gap = 1.0;     // 1 - |lambda_2(W)|
  // sigma_2 = ||W - (1/n) 1 1^T||_2 when W is doubly stochastic, otherwise empty.
  std::optional<double> sigma2;
};

// `w`: [n, n] float64 (other floating dtypes are converted), column-stochastic.
SpectralInfo spectral_info(const at::Tensor& w);
SpectralInfo spectral_info(const Topology& topology);
// For a schedule: the product over one period (a static topology: W itself).
SpectralInfo spectral_info(const TopologySchedule& schedule);

double spectral_gap(const Topology& topology);
double spectral_gap(const TopologySchedule& schedule);

// W_{p-1} ... W_1 W_0 over one period p: [n, n] float64 (x after a period = product @ x).
at::Tensor period_product(const TopologySchedule& schedule);

// Moduli of the eigenvalues of `w` ([n, n]), sorted in decreasing order: [n] float64.
at::Tensor eigenvalue_moduli(const at::Tensor& w);

}  // namespace lpdt::graph
