#pragma once
// Gossip (consensus) algorithms over node-batched numerators (docs/algorithms.md).
//
// Mixing matrix W: [n, n] float32, W[i][j] = the weight node i gives to node j's message (edge
// j -> i), self-loops, column-stochastic (sum_i W[i][j] = 1); it may change every round.
// Node i's aggregate of messages M (rows = messages) is (W M)[i]. Every algorithm's consensus
// step has the form  z <- z + eta (W M - M)  for some public message M, i.e.  z <- z + L M
// with the consensus step matrix L = eta (W - I), one [n, n] x [n, P] product per round.
//
// Unlike the official code, which applies the consensus step at the start of the next iteration
// (before its forward pass), lpdt applies it right after the local step of the same iteration:
// the sequence of parameters is the same (reference spec 2), only evaluation timing changes.
#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "lpdt/compress/compressor.h"
#include "lpdt/core/layer_layout.h"

namespace lpdt::algo {

enum class Algorithm {
  kDpsgd,        // D-PSGD (Lian et al. 2017) + push-sum (SGP, Assran et al. 2019)
  kDeepSqueeze,  // DeepSqueeze (Tang et al. 2019) + push-sum = Sparse-Push (Aketi et al. 2021)
  kChoco,        // Choco-SGD (Koloskova et al. 2020) + push-sum = Quant-SGP (Taheri et al. 2020)
};

// "dpsgd" | "d-psgd"; "deepsqueeze" | "deep-squeeze" | "sparse-push" | "ds";
// "choco" | "choco-sgd" | "quant-sgp". ConfigError otherwise.
Algorithm parse_algorithm(std::string_view name);
std::string_view to_string(Algorithm algorithm);

// Where Choco's public copies x-hat start (docs/algorithms.md).
enum class XhatInit {
  kZero,   // 0, as the official code: the first rounds transmit (compressed) models
  kModel,  // the initial numerators z_0 (every node knows the common initial model)
};
XhatInit parse_xhat_init(std::string_view name);  // "zero" | "model"
std::string_view to_string(XhatInit init);

// L = eta (W - I): [n, n], same dtype and device as W.
at::Tensor consensus_step_matrix(const at::Tensor& mixing, double eta);

// The consensus step of one round, L = eta (W - I), and the product z += L M over [n, P] buffers.
// On CPU the product runs as a sparse (COO) x dense product, whose cost is proportional to the
// edges of W times P: Debian's LibTorch calls the reference (netlib) BLAS, whose dense
// [n, n] x [n, P] GEMM is ~8x slower on ResNet-20-sized buffers (16 nodes: 56 ms vs 7 ms). On
// other devices it is a dense GEMM. Both compute the same sums (in a different order).
class ConsensusStep {
 public:
  // mixing: [n, n] float32. eta in (0, 1].
  ConsensusStep(const at::Tensor& mixing, double eta);

  // L [n, n] dense.
  const at::Tensor& matrix() const { return dense_; }
  // z += L m; z, m: [n, P] float32; m must not alias z.
  void add_product(at::Tensor& z, const at::Tensor& m) const;
  // z += L z (D-PSGD), through a temporary.
  void add_self_product(at::Tensor& z) const;

 private:
  at::Tensor dense_;   // [n, n]
  at::Tensor sparse_;  // coalesced COO of dense_ (CPU only), undefined elsewhere
};

// One decentralized consensus algorithm: its buffers and one round of gossip.
class GossipAlgorithm {
 public:
  virtual ~GossipAlgorithm() = default;

  virtual Algorithm kind() const = 0;

  // Called once, before the first round, with the initial numerators z [n, P] (Choco uses it
  // when x-hat starts from the model).
  virtual void start(const at::Tensor& z) {}

  // One round on the numerators z [n, P] float32 (updated in place) with the consensus step
  // L = eta (W - I); `round` seeds random compressors. The push-sum weights are mixed by the
  // caller with the same L. Returns the message every node sent (its values as the receivers
  // see them, its kept positions and codes: what the wire payload carries, comm/message_codec.h).
  virtual compress::Compressed mix(at::Tensor& z, const ConsensusStep& step, std::int64_t round) = 0;

  // The algorithm's buffers, live (copy_ into them to restore a checkpoint).
  virtual std::map<std::string, at::Tensor> state() { return {}; }
};

// Builds an algorithm for n nodes of `layout` with compressor `compressor` (D-PSGD requires
// "none": ConfigError otherwise). Buffers are allocated on `device`.
std::unique_ptr<GossipAlgorithm> make_gossip(Algorithm algorithm,
                                             std::unique_ptr<compress::Compressor> compressor,
                                             std::int64_t num_nodes, const LayerLayout& layout,
                                             XhatInit xhat_init, at::Device device);

}  // namespace lpdt::algo
