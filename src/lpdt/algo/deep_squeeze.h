#pragma once
// DeepSqueeze (Tang et al. 2019) with push-sum = Sparse-Push (Aketi et al. 2021), reference
// spec 5.2. Error-compensated compression of the model itself:
//   v = z + e            (error-compensated numerators)
//   c = C(v)             (what is sent)
//   e = v - c            (error feedback, kept locally)
//   z <- z + eta (W c - c)
// With the identity compressor, c = z and e = 0: D-PSGD.
#include "lpdt/algo/gossip.h"

namespace lpdt::algo {

class DeepSqueeze final : public GossipAlgorithm {
 public:
  // num_nodes: the hosted nodes (count).
  DeepSqueeze(std::unique_ptr<compress::Compressor> compressor, std::int64_t num_nodes,
              const LayerLayout& layout, at::Device device);
  Algorithm kind() const override { return Algorithm::kDeepSqueeze; }
  compress::Compressed prepare(at::Tensor& z, std::int64_t round) override;
  void combine(at::Tensor& z, const at::Tensor& messages, const ConsensusStep& step) override;
  // "error_feedback": the hosted nodes' e [count, P] float32.
  std::map<std::string, at::Tensor> state() override;

  const at::Tensor& error_feedback() const { return error_; }

 private:
  std::unique_ptr<compress::Compressor> compressor_;
  LayerLayout layout_;
  at::Tensor error_;  // e [n, P] float32, zeros
};

}  // namespace lpdt::algo
