#pragma once
// Choco-SGD (Koloskova et al. 2019, 2020) with push-sum = Quant-SGP (Taheri et al.
// 2020), reference spec 5.3. Compressed updates of a public copy x-hat of every node's numerators:
//   q  = C(z - xh)       (what is sent)
//   xh <- xh + q         (every in-neighbour applies the same q to its copy of xh_j)
//   z  <- z + eta (W xh - xh)
// The official code keeps, per node, the running sum s_i = sum_{j != i} W_ij xh_j of what it
// received; with a static W that is the same quantity. lpdt recomputes W xh every round (the
// simulator holds every xh), which stays exact when W changes between rounds.
#include "lpdt/algo/gossip.h"

namespace lpdt::algo {

class Choco final : public GossipAlgorithm {
 public:
  Choco(std::unique_ptr<compress::Compressor> compressor, std::int64_t num_nodes,
        const LayerLayout& layout, XhatInit xhat_init, at::Device device);
  Algorithm kind() const override { return Algorithm::kChoco; }
  // XhatInit::kModel: xh = z_0.
  void start(const at::Tensor& z) override;
  compress::Compressed mix(at::Tensor& z, const ConsensusStep& step, std::int64_t round) override;
  // "xhat": xh [n, P] float32.
  std::map<std::string, at::Tensor> state() override;

  const at::Tensor& xhat() const { return xhat_; }

 private:
  std::unique_ptr<compress::Compressor> compressor_;
  LayerLayout layout_;
  XhatInit xhat_init_;
  at::Tensor xhat_;  // xh [n, P] float32
};

}  // namespace lpdt::algo
