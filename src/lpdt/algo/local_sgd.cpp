#include "lpdt/algo/local_sgd.h"

#include <cmath>
#include <sstream>

#include "lpdt/core/error.h"

namespace lpdt::algo {

void validate(const SgdOptions& options) {
  if (!(options.momentum() >= 0.0 && options.momentum() < 1.0)) {
    std::ostringstream msg;
    msg << "momentum must be in [0, 1), got " << options.momentum();
    throw ConfigError(msg.str());
  }
  if (!(options.weight_decay() >= 0.0) || !std::isfinite(options.weight_decay())) {
    std::ostringstream msg;
    msg << "weight_decay must be finite and >= 0, got " << options.weight_decay();
    throw ConfigError(msg.str());
  }
}

LocalSgd::LocalSgd(const SgdOptions& options, std::int64_t num_nodes, std::int64_t numel,
                   at::Device device)
    : options_(options) {
  validate(options_);
  if (options_.momentum() != 0.0) {
    buffer_ = at::zeros({num_nodes, numel}, at::TensorOptions().dtype(at::kFloat).device(device));
  }
}

void LocalSgd::step(at::Tensor& z, const at::Tensor& grad, double lr, const at::Tensor& trainable) {
  const double mu = options_.momentum();
  // The same ATen calls, in the same order, as torch.optim.SGD (torch/optim/sgd.py, 1.13).
  at::Tensor d = options_.weight_decay() != 0.0 ? grad.add(z, options_.weight_decay())
                                                : grad.clone();  // d = g + wd z
  if (trainable.defined()) d.mul_(trainable);                    // masked: d = 0
  if (mu != 0.0) {
    buffer_.mul_(mu).add_(d);  // buf = mu buf + d
    if (options_.nesterov()) {
      d.add_(buffer_, mu);  // d = d + mu buf
    } else {
      d = buffer_;  // d = buf
    }
  }
  z.add_(d, -lr);  // z -= lr d
}

}  // namespace lpdt::algo
