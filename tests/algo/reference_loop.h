#pragma once
// A plain per-node, per-scalar implementation of one decentralized iteration exactly as the
// official code runs it (reference spec 4.1, 4.2, 5.1-5.3): message passing over in-edges,
// Choco's running neighbour sum s_i, the gossip copy gps of the push-sum weight, QGM in its
// two-part official form. Doubles throughout. The batched implementation is tested against it.
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "lpdt/compress/compressor.h"
#include "lpdt/core/layer_layout.h"

namespace lpdt::algo::testing {

using Vec = std::vector<double>;

struct ReferenceConfig {
  std::string algorithm = "choco";  // dpsgd | deepsqueeze | choco
  double keep = 1.0;                // < 0: identity compressor; else top-k keep fraction
  bool identity = true;
  double eta = 1.0;
  double momentum = 0.9;
  bool nesterov = true;
  double weight_decay = 1e-4;
  bool qgm = false;
  // "sgd", or "adam" / "adamw" (reference_adam_element; momentum and nesterov unused).
  std::string optimizer = "sgd";
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

// One element of one Adam / AdamW step t >= 1 (Kingma & Ba 2015; Loshchilov & Hutter 2019) in the
// textbook form, doubles: z, m, v updated in place.
inline void reference_adam_element(double lr, double beta1, double beta2, double eps,
                                   double weight_decay, bool decoupled, int t, double g, double& z,
                                   double& m, double& v) {
  if (decoupled) {
    z *= 1.0 - lr * weight_decay;
  } else {
    g += weight_decay * z;
  }
  m = beta1 * m + (1.0 - beta1) * g;
  v = beta2 * v + (1.0 - beta2) * g * g;
  const double m_hat = m / (1.0 - std::pow(beta1, t));
  const double v_hat = v / (1.0 - std::pow(beta2, t));
  z -= lr * m_hat / (std::sqrt(v_hat) + eps);
}

// Layer-wise top-k of one node's vector: stable sort by |x| descending, keep K per segment.
inline Vec reference_top_k(const Vec& v, const LayerLayout& layout, double keep) {
  Vec out(v.size(), 0.0);
  for (const auto& seg : layout.segments) {
    std::vector<std::int64_t> order(seg.numel);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      return std::abs(v[seg.offset + a]) > std::abs(v[seg.offset + b]);
    });
    const std::int64_t k = compress::kept_count(seg.numel, keep);
    for (std::int64_t r = 0; r < k; ++r) out[seg.offset + order[r]] = v[seg.offset + order[r]];
  }
  return out;
}

class ReferenceLoop {
 public:
  ReferenceLoop(const ReferenceConfig& config, const LayerLayout& layout, const torch::Tensor& x0)
      : c_(config), layout_(layout), n_(x0.size(0)), p_(x0.size(1)) {
    x_ = from_tensor(x0);
    ps_.assign(n_, 1.0);
    buf_ = zeros();
    m_ = zeros();
    e_ = zeros();
    xh_ = zeros();
    s_ = zeros();
  }

  // One iteration with gradient grad [n, P] (taken at the current x) and mixing W [n, n].
  void step(const torch::Tensor& grad_t, const torch::Tensor& w_t, double lr, bool local = true) {
    const auto g = from_tensor(grad_t);
    const auto w = from_tensor(w_t);
    const double beta = c_.momentum;
    // ps_numerator(): z = x * ps
    std::vector<Vec> z = x_;
    for (int i = 0; i < n_; ++i)
      for (int k = 0; k < p_; ++k) z[i][k] *= ps_[i];
    if (local && c_.optimizer != "sgd") {
      ++adam_steps_;
      for (int i = 0; i < n_; ++i) {
        for (int k = 0; k < p_; ++k) {
          reference_adam_element(lr, c_.beta1, c_.beta2, c_.eps, c_.weight_decay,
                                 c_.optimizer == "adamw", adam_steps_, g[i][k], z[i][k], m_[i][k],
                                 buf_[i][k]);
        }
      }
    } else if (local) {
      for (int i = 0; i < n_; ++i) {
        for (int k = 0; k < p_; ++k) {
          double d = g[i][k] + c_.weight_decay * z[i][k];
          if (c_.qgm) {
            // Official hook: b = beta m + g; g' = g + beta b; m = beta m + (1 - beta) g'.
            const double b = beta * m_[i][k] + d;
            const double gp = c_.nesterov ? d + beta * b : b;
            m_[i][k] = beta * m_[i][k] + (1.0 - beta) * gp;
            z[i][k] -= lr * gp;
          } else {
            if (beta != 0.0) {
              buf_[i][k] = first_ ? d : beta * buf_[i][k] + d;
              d = c_.nesterov ? d + beta * buf_[i][k] : buf_[i][k];
            }
            z[i][k] -= lr * d;
          }
        }
      }
      first_ = false;
    }
    // transfer_params(): build the messages.
    std::vector<Vec> msg(n_);
    for (int i = 0; i < n_; ++i) {
      if (c_.algorithm == "dpsgd") {
        msg[i] = z[i];
      } else if (c_.algorithm == "deepsqueeze") {
        Vec v(p_);
        for (int k = 0; k < p_; ++k) v[k] = z[i][k] + e_[i][k];
        msg[i] = compress(v);
        for (int k = 0; k < p_; ++k) e_[i][k] = v[k] - msg[i][k];
      } else {
        Vec d(p_);
        for (int k = 0; k < p_; ++k) d[k] = z[i][k] - xh_[i][k];
        msg[i] = compress(d);
        for (int k = 0; k < p_; ++k) xh_[i][k] += msg[i][k];
      }
    }
    const Vec gps = ps_;
    // mix(): every node receives W_ij * msg_j from each in-neighbour j != i.
    std::vector<Vec> recv(n_, Vec(p_, 0.0));
    Vec recv_ps(n_, 0.0);
    for (int i = 0; i < n_; ++i) {
      for (int j = 0; j < n_; ++j) {
        if (j == i || w[i][j] <= 0.0) continue;
        for (int k = 0; k < p_; ++k) recv[i][k] += w[i][j] * msg[j][k];
        recv_ps[i] += w[i][j] * gps[j];
      }
    }
    // Apply the round (spec 5.2 / 5.3).
    for (int i = 0; i < n_; ++i) {
      const double self = w[i][i] - 1.0;
      Vec r(p_);
      if (c_.algorithm == "choco") {
        ps_[i] += c_.eta * (recv_ps[i] + self * ps_[i]);
        for (int k = 0; k < p_; ++k) {
          s_[i][k] += recv[i][k];
          r[k] = c_.eta * (s_[i][k] + self * xh_[i][k]);
        }
      } else {
        ps_[i] += c_.eta * (recv_ps[i] + self * gps[i]);
        for (int k = 0; k < p_; ++k) r[k] = c_.eta * (recv[i][k] + self * msg[i][k]);
      }
      for (int k = 0; k < p_; ++k) {
        z[i][k] += r[k];
        if (c_.qgm && local) m_[i][k] += r[k] * (beta - 1.0) / (lr * ps_[i]);
      }
    }
    // unbias(): x = z / ps
    for (int i = 0; i < n_; ++i)
      for (int k = 0; k < p_; ++k) x_[i][k] = z[i][k] / ps_[i];
  }

  torch::Tensor x() const { return to_tensor(x_); }
  torch::Tensor ps() const { return torch::tensor(ps_, torch::kDouble); }
  torch::Tensor qgm_buffer() const { return to_tensor(m_); }
  torch::Tensor adam_m() const { return to_tensor(m_); }
  torch::Tensor adam_v() const { return to_tensor(buf_); }

 private:
  Vec compress(const Vec& v) const {
    return c_.identity ? v : reference_top_k(v, layout_, c_.keep);
  }
  std::vector<Vec> zeros() const { return std::vector<Vec>(n_, Vec(p_, 0.0)); }
  static std::vector<Vec> from_tensor(const torch::Tensor& t) {
    const auto d = t.to(torch::kDouble).contiguous();
    std::vector<Vec> out(d.size(0), Vec(d.size(1)));
    const auto a = d.accessor<double, 2>();
    for (int i = 0; i < d.size(0); ++i)
      for (int k = 0; k < d.size(1); ++k) out[i][k] = a[i][k];
    return out;
  }
  static torch::Tensor to_tensor(const std::vector<Vec>& v) {
    auto t =
        torch::empty({static_cast<std::int64_t>(v.size()), static_cast<std::int64_t>(v[0].size())},
                     torch::kDouble);
    auto a = t.accessor<double, 2>();
    for (std::size_t i = 0; i < v.size(); ++i)
      for (std::size_t k = 0; k < v[i].size(); ++k) a[i][k] = v[i][k];
    return t;
  }

  ReferenceConfig c_;
  LayerLayout layout_;
  int n_, p_;
  bool first_ = true;
  int adam_steps_ = 0;  // Adam keeps m in m_ and v in buf_
  std::vector<Vec> x_, buf_, m_, e_, xh_, s_;
  Vec ps_;
};

}  // namespace lpdt::algo::testing
