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
//
// A circulant W (is_circulant) is diagonal in the Fourier basis: its eigenvalues are the DFT of
// its first column, lambda_k = sum_m c_m e^{-2 pi i m k / n}, found in O(n log n) where geev
// takes O(n^3) (4.4 s for a 1,024-node directed ring on a 2-core CPU, 23.5 s at 2,048; its
// sigma_2 is then a max over the same eigenvalues, and a symmetric W's is |lambda_2|).
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

// Entries of a circulant W may differ by this much (float32 weights cast to float64 are exact).
inline constexpr double kCirculantTolerance = 1e-12;
// Whether `w` ([n, n]) is circulant, W_ij = c_{(i - j) mod n}: every node mixes the nodes at the
// same offsets with the same weights (rings, directed rings, the exponential graph, the complete
// graph, and the product of such over a period).
bool is_circulant(const at::Tensor& w);

}  // namespace lpdt::graph
