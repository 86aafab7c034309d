#pragma once
// Choco-SGD (Koloskova et al. 2019, 2020) with push-sum = Quant-SGP (Taheri et al.
// 2020), reference spec 5.3. Compressed updates of a public copy x-hat of every node's numerators:
//   q  = C(z - xh)       (what is sent)
//   xh <- xh + q         (every in-neighbour applies the same q to its copy of xh_j)
//   z  <- z + eta (W xh - xh)
// The official code keeps, per node, the running sum s_i = sum_{j != i} W_ij xh_j of what it
// received; with a static W that is the same quantity. lpdt keeps a copy xh_j of every node's
// public copy it hears from (the simulator: all of them; a rank: its nodes' and their
// in-neighbours') and recomputes W xh every round, which stays exact when W changes between
// rounds. A copy is updated with the very q_j its owner applied, so it is bit-identical.
#include "lpdt/algo/gossip.h"

namespace lpdt::algo {

class Choco final : public GossipAlgorithm {
 public:
  Choco(std::unique_ptr<compress::Compressor> compressor, const NodeRange& nodes,
        const LayerLayout& layout, XhatInit xhat_init, at::Device device);
  Algorithm kind() const override { return Algorithm::kChoco; }
  // XhatInit::kModel: xh = z_0 for every node (all start from the same model).
  void start(const at::Tensor& z) override;
  compress::Compressed prepare(at::Tensor& z, std::int64_t round) override;
  void combine(at::Tensor& z, const at::Tensor& messages, const ConsensusStep& step) override;
  const at::Tensor& mixed_operand(const at::Tensor& messages) const override { return xhat_; }
  // "xhat": the hosted nodes' xh [count, P] float32.
  std::map<std::string, at::Tensor> state() override;
  // Every row of xh (the hosted ones and the copies of the other nodes').
  void restore(const std::map<std::string, at::Tensor>& all_nodes) override;

  // xh of all n nodes [n, P] (rows of nodes this process never hears from stay unused).
  const at::Tensor& xhat() const { return xhat_; }

 private:
  std::unique_ptr<compress::Compressor> compressor_;
  NodeRange nodes_;
  LayerLayout layout_;
  XhatInit xhat_init_;
  at::Tensor xhat_;  // xh [n, P] float32
};

}  // namespace lpdt::algo
