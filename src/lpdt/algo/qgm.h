#pragma once
// Quasi-global momentum (QGM; Lin et al. 2021, "Quasi-global momentum: accelerating decentralized
// deep learning on heterogeneous data"), reference spec 4.2.
//
// The local step is plain SGD on a Nesterov-form direction built from the QGM buffer m (zeros):
//   d   = g + wd z
//   g'  = d + beta (beta m + d)      (nesterov)   or   g' = beta m + d   (heavy ball)
//   z  <- z - lr g'
// After the consensus step (and de-biasing), m tracks the node's whole displacement:
//   m  <- beta m + (1 - beta) (x_before_local_step - x_after_consensus) / lr
// With push-sum weights 1 this is exactly the official code's two-part update
// (m = beta m + (1-beta) g' in the backward hook, then m -= (1-beta) r / lr for the consensus
// step r). beta is the momentum option. The mask works as in LocalSgd: masked columns get g' = 0
// and keep m = 0.
#include <ATen/ATen.h>

#include <cstdint>

namespace lpdt::algo {

class QuasiGlobalMomentum {
 public:
  // beta in [0, 1), weight_decay >= 0 (ConfigError otherwise). Buffer m [n, P] float32 zeros.
  QuasiGlobalMomentum(double beta, bool nesterov, double weight_decay, std::int64_t num_nodes,
                      std::int64_t numel, at::Device device);

  // z [n, P] (in place), grad [n, P], lr > 0, trainable undefined or [1, P] float32 0/1.
  void local_step(at::Tensor& z, const at::Tensor& grad, double lr,
                  const at::Tensor& trainable) const;

  // x_before: de-biased parameters before the local step; x_after: after consensus and
  // de-biasing; both [n, P]. Updates m.
  void after_consensus(const at::Tensor& x_before, const at::Tensor& x_after, double lr,
                       const at::Tensor& trainable);

  // m [n, P] float32, live.
  at::Tensor& buffer() { return m_; }

 private:
  double beta_;
  bool nesterov_;
  double weight_decay_;
  at::Tensor m_;
};

}  // namespace lpdt::algo
