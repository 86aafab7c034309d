#pragma once
// D-PSGD (Lian et al. 2017) with push-sum: every node sends its whole numerator vector.
//   z <- z + eta (W z - z)
// (eta = 1: plain gossip averaging z <- W z.)
#include "lpdt/algo/gossip.h"

namespace lpdt::algo {

class Dpsgd final : public GossipAlgorithm {
 public:
  explicit Dpsgd(const LayerLayout& layout) : layout_(layout) {}
  Algorithm kind() const override { return Algorithm::kDpsgd; }
  compress::Compressed prepare(at::Tensor& z, std::int64_t round) override;
  void combine(at::Tensor& z, const at::Tensor& messages, const ConsensusStep& step) override;

 private:
  LayerLayout layout_;
};

}  // namespace lpdt::algo
