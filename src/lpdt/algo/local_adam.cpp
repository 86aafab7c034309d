#include "lpdt/algo/local_adam.h"

#include <cmath>
#include <sstream>

#include "lpdt/core/error.h"

namespace lpdt::algo {
namespace {

void check_beta(const char* name, double beta) {
  if (!(beta >= 0.0 && beta < 1.0)) {
    std::ostringstream msg;
    msg << "adam " << name << " must be in [0, 1), got " << beta;
    throw ConfigError(msg.str());
  }
}

}  // namespace

void validate(const AdamOptions& options) {
  check_beta("beta1", options.beta1());
  check_beta("beta2", options.beta2());
  if (!(options.eps() > 0.0)) {
    std::ostringstream msg;
    msg << "adam eps must be > 0 (it keeps m / (sqrt(v) + eps) finite where v = 0), got "
        << options.eps();
    throw ConfigError(msg.str());
  }
  if (!(options.weight_decay() >= 0.0) || !std::isfinite(options.weight_decay())) {
    std::ostringstream msg;
    msg << "weight_decay must be finite and >= 0, got " << options.weight_decay();
    throw ConfigError(msg.str());
  }
}

LocalAdam::LocalAdam(const AdamOptions& options, std::int64_t num_nodes, std::int64_t numel,
                     at::Device device)
    : options_(options) {
  validate(options_);
  const auto float_options = at::TensorOptions().dtype(at::kFloat).device(device);
  exp_avg_ = at::zeros({num_nodes, numel}, float_options);
  exp_avg_sq_ = at::zeros({num_nodes, numel}, float_options);
  step_count_ = at::zeros({}, at::kLong);
}

void LocalAdam::step(at::Tensor& z, const at::Tensor& grad, double lr,
                     const at::Tensor& trainable) {
  const double b1 = options_.beta1();
  const double b2 = options_.beta2();
  const double wd = options_.weight_decay();
  step_count_.add_(1);
  const auto t = static_cast<double>(step_count_.item<std::int64_t>());
  // The same ATen calls, in the same order, as torch.optim.Adam / AdamW (torch/optim/adam.py,
  // adamw.py, _single_tensor_*, 1.13).
  at::Tensor g = grad;
  if (options_.decoupled_weight_decay()) {
    if (wd != 0.0) {
      if (trainable.defined()) {
        // Factor (1 - lr wd) on trainable columns, 1 on masked ones; 1 * f + 0 == f exactly, so
        // the trainable columns see torch's param.mul_(1 - lr * wd) bit for bit.
        z.mul_(trainable * (1.0 - lr * wd) + (1.0 - trainable));
      } else {
        z.mul_(1.0 - lr * wd);  // z *= 1 - lr wd
      }
    }
  } else if (wd != 0.0) {
    g = grad.add(z, wd);  // g = grad + wd z
  }
  if (trainable.defined()) g = g.mul(trainable);  // masked: g = 0
  exp_avg_.mul_(b1).add_(g, 1.0 - b1);            // m = b1 m + (1 - b1) g
  exp_avg_sq_.mul_(b2).addcmul_(g, g, 1.0 - b2);  // v = b2 v + (1 - b2) g^2
  const double bias_correction1 = 1.0 - std::pow(b1, t);
  const double bias_correction2 = 1.0 - std::pow(b2, t);
  const double step_size = lr / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  // denom = sqrt(v) / sqrt(1 - b2^t) + eps
  const at::Tensor denom = (exp_avg_sq_.sqrt() / bias_correction2_sqrt).add_(options_.eps());
  z.addcdiv_(exp_avg_, denom, -step_size);  // z -= lr / (1 - b1^t) * m / denom
}

}  // namespace lpdt::algo
