#pragma once
// Consensus distance: how far the nodes' models are from their average.
#include <ATen/ATen.h>

namespace lpdt::algo {

// mean_i ||x_i - x_bar||^2 with x_bar = mean_i x_i; x: [n, P] (de-biased parameters). Computed in
// float64. (Lives in algo/ for now; metrics/ may take it over.)
double consensus_distance(const at::Tensor& x);

}  // namespace lpdt::algo
