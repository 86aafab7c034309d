#include "lpdt/algo/qgm.h"

#include <sstream>

#include "lpdt/algo/local_sgd.h"
#include "lpdt/core/error.h"

namespace lpdt::algo {

QuasiGlobalMomentum::QuasiGlobalMomentum(double beta, bool nesterov, double weight_decay,
                                         std::int64_t num_nodes, std::int64_t numel,
                                         at::Device device)
    : beta_(beta), nesterov_(nesterov), weight_decay_(weight_decay) {
  validate(SgdOptions().momentum(beta).nesterov(nesterov).weight_decay(weight_decay));
  m_ = at::zeros({num_nodes, numel}, at::TensorOptions().dtype(at::kFloat).device(device));
}

void QuasiGlobalMomentum::local_step(at::Tensor& z, const at::Tensor& grad, double lr,
                                     const at::Tensor& trainable) const {
  if (!(lr > 0.0)) {
    std::ostringstream msg;
    msg << "quasi-global momentum needs a learning rate > 0 (it divides by it), got " << lr;
    throw UserError(msg.str());
  }
  // Spec 4.2 (official hook): g = g + wd z; b = beta m + g; g' = g + beta b.
  at::Tensor d = weight_decay_ != 0.0 ? grad.add(z, weight_decay_) : grad.clone();
  if (trainable.defined()) d.mul_(trainable);
  at::Tensor b = m_.mul(beta_).add_(d);                     // b  = beta m + d
  at::Tensor direction = nesterov_ ? d.add_(b, beta_) : b;  // g' = d + beta b  |  b
  if (trainable.defined()) direction.mul_(trainable);
  z.add_(direction, -lr);  // z -= lr g'   (plain SGD)
}

void QuasiGlobalMomentum::after_consensus(const at::Tensor& x_before, const at::Tensor& x_after,
                                          double lr, const at::Tensor& trainable) {
  LPDT_CHECK(lr > 0.0, "quasi-global momentum: lr must be > 0");
  // m <- beta m + (1 - beta) (x_t - x_{t+1}) / lr
  at::Tensor displacement = (x_before - x_after).div_(lr);
  if (trainable.defined()) displacement.mul_(trainable);
  m_.mul_(beta_).add_(displacement, 1.0 - beta_);
}

}  // namespace lpdt::algo
