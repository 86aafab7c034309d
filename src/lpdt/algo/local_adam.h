#pragma once
// The adaptive local optimizer: Adam (Kingma & Ba 2015) and AdamW (Loshchilov & Hutter 2019) over
// node-batched numerators, exactly torch.optim.Adam / AdamW (1.13, single-tensor path, no
// amsgrad), the optimizer the paper fine-tunes DistilBERT with. Per node and column, step t >= 1:
//   Adam:  g = grad + wd z                      (L2 penalty in the gradient)
//   AdamW: z <- z (1 - lr wd);  g = grad        (decoupled weight decay)
//   m <- b1 m + (1 - b1) g
//   v <- b2 v + (1 - b2) g^2
//   denom = sqrt(v) / sqrt(1 - b2^t) + eps
//   z <- z - (lr / (1 - b1^t)) m / denom        (= lr mhat / (sqrt(vhat) + eps))
// m, v and t are per node and purely local: never gossiped, never touched by consensus. Like
// LocalSgd, the step acts on the push-sum numerator z. A column mask excludes segments from the
// update and from weight decay: masked columns get g = 0 (m, v stay 0 there, so z moves by
// 0 / eps = 0) and a decay factor of 1.
#include <ATen/ATen.h>
#include <torch/arg.h>

#include <cstdint>

namespace lpdt::algo {

struct AdamOptions {
  TORCH_ARG(double, beta1) = 0.9;    // in [0, 1)
  TORCH_ARG(double, beta2) = 0.999;  // in [0, 1)
  // > 0 (torch allows 0, but masked or never-updated columns then divide 0 by 0).
  TORCH_ARG(double, eps) = 1e-8;
  TORCH_ARG(double, weight_decay) = 0.0;  // >= 0, applied to the numerator z
  // false: Adam (wd in the gradient); true: AdamW (z scaled by 1 - lr wd before the step).
  TORCH_ARG(bool, decoupled_weight_decay) = false;
};

// ConfigError (naming the value) unless beta1, beta2 in [0, 1), eps > 0 and weight_decay >= 0.
void validate(const AdamOptions& options);

class LocalAdam {
 public:
  // m, v [n, P] float32 on `device`, zero; the step count t is 0 (a 0-d int64 CPU tensor: the
  // bias corrections are host scalars, as in torch's non-capturable path).
  LocalAdam(const AdamOptions& options, std::int64_t num_nodes, std::int64_t numel,
            at::Device device);

  // z [n, P] float32 (updated in place), grad [n, P] float32, lr >= 0.
  // trainable: undefined (every column), or [1, P] float32 of 0/1.
  void step(at::Tensor& z, const at::Tensor& grad, double lr, const at::Tensor& trainable);

  const AdamOptions& options() const { return options_; }
  // m, v [n, P] float32 and t (0-d int64 CPU, steps done), live.
  at::Tensor& exp_avg() { return exp_avg_; }
  at::Tensor& exp_avg_sq() { return exp_avg_sq_; }
  at::Tensor& step_count() { return step_count_; }

 private:
  AdamOptions options_;
  at::Tensor exp_avg_;     // m [n, P]
  at::Tensor exp_avg_sq_;  // v [n, P]
  at::Tensor step_count_;  // t, 0-d int64 CPU
};

}  // namespace lpdt::algo
