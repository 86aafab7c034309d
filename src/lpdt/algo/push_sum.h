#pragma once
// Push-sum weights (Kempe et al. 2003; SGP, Assran et al. 2019), reference spec 5.1.
//
// With a column-stochastic (not doubly stochastic) mixing matrix W, gossip preserves the column
// sums (1^T W = 1^T) but not the average of each node's value. Every node carries a scalar weight
// ps_i (init 1) mixed with the same matrix; the algorithms mix numerators z_i = x_i * ps_i, and the
// de-biased parameters x_i = z_i / ps_i converge to the average of the initial x. With a doubly
// stochastic W every ps_i stays 1 and push-sum changes nothing.
#include <ATen/ATen.h>

#include <cstdint>

namespace lpdt::algo {

class ConsensusStep;  // algo/gossip.h

class PushSum {
 public:
  // n hosted nodes, weights initialised to 1 (float32, on `device`).
  PushSum(std::int64_t num_nodes, at::Device device);

  // [n] float32, live (mix() and checkpoint loading write into it).
  at::Tensor& weights() { return weights_; }
  const at::Tensor& weights() const { return weights_; }

  // x [n, P] -> z = x * ps, in place (spec 5.1: after backward, p *= ps).
  void to_numerator(at::Tensor& x) const;
  // z [n, P] -> x = z / ps, in place (spec 5.1: before forward, p /= ps).
  void to_params(at::Tensor& z) const;

  // ps <- ps + eta * (W ps - ps) = ps + L ps with the round's ConsensusStep (the same sparse
  // product as the numerators'). all_weights: [n] every node's weight before the round as its
  // receivers see it (the weight travels uncompressed with every message, spec 5.1); for the
  // hosted rows it equals weights(), and it must not alias it.
  void mix(const ConsensusStep& step, const at::Tensor& all_weights);

 private:
  at::Tensor weights_;  // [n] float32
};

}  // namespace lpdt::algo
