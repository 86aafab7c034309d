#pragma once
// The local optimizer: SGD with (Nesterov) momentum and weight decay over node-batched numerators,
// exactly torch.optim.SGD with dampening 0 (reference spec 4.1):
//   d   = g + wd z
//   buf = d                     (first step)
//   buf = mu buf + d            (later steps)
//   d   = d + mu buf            (nesterov)   or   d = buf   (heavy ball)
//   z  <- z - lr d
// Momentum buffers are per node and purely local: never gossiped, never touched by consensus.
// A column mask excludes segments (e.g. quantizer running ranges) from the update and from weight
// decay: masked columns get d = 0, so z and buf stay unchanged there.
#include <ATen/ATen.h>
#include <torch/arg.h>

#include <cstdint>

namespace lpdt::algo {

struct SgdOptions {
  TORCH_ARG(double, momentum) = 0.9;  // mu in [0, 1); 0 = plain SGD
  TORCH_ARG(bool, nesterov) = true;
  TORCH_ARG(double,
            weight_decay) = 1e-4;  // wd >= 0, applied to the numerator z (as the official code)
};

// ConfigError unless momentum in [0, 1) and weight_decay >= 0.
void validate(const SgdOptions& options);

class LocalSgd {
 public:
  // Momentum buffers [n, P] float32 on `device`, zero: mu * 0 + d == d bit for bit, the same as
  // torch's clone of d on the first step.
  LocalSgd(const SgdOptions& options, std::int64_t num_nodes, std::int64_t numel,
           at::Device device);

  // z [n, P] float32 (updated in place), grad [n, P] float32, lr >= 0.
  // trainable: undefined (every column), or [1, P] float32 of 0/1.
  void step(at::Tensor& z, const at::Tensor& grad, double lr, const at::Tensor& trainable);

  const SgdOptions& options() const { return options_; }
  // buf [n, P] float32, live.
  at::Tensor& momentum_buffer() { return buffer_; }

 private:
  SgdOptions options_;
  at::Tensor buffer_;
};

}  // namespace lpdt::algo
