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
#include "lpdt/core/node_range.h"

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
//
// A process hosting the nodes `rows` (NodeRange) keeps only their rows of L: z has `rows.count`
// rows and M all n. On CPU each row of the sparse product adds its terms in increasing column
// order whatever the other rows are, so a rank of a multi-process run computes its nodes' sums
// bit for bit as the simulator does (tested under MPI, dist/).
class ConsensusStep {
 public:
  // mixing: [n, n] float32. eta in (0, 1]. rows: the hosted nodes (default: all n).
  ConsensusStep(const at::Tensor& mixing, double eta);
  ConsensusStep(const at::Tensor& mixing, double eta, const NodeRange& rows);

  // The hosted rows of L: [count, n] dense.
  const at::Tensor& matrix() const { return dense_; }
  const NodeRange& rows() const { return rows_; }
  // z += L m; z: [count, P], m: [n, P] float32; m must not alias z.
  void add_product(at::Tensor& z, const at::Tensor& m) const;
  // z += L z (all rows hosted only), through a temporary.
  void add_self_product(at::Tensor& z) const;

 private:
  NodeRange rows_;
  at::Tensor dense_;   // [count, n]
  at::Tensor sparse_;  // coalesced COO of dense_ (CPU only), undefined elsewhere
};

// One decentralized consensus algorithm: its buffers and one round of gossip.
class GossipAlgorithm {
 public:
  virtual ~GossipAlgorithm() = default;

  virtual Algorithm kind() const = 0;

  // Called once, before the first round, with the hosted nodes' initial numerators z
  // [count, P] (Choco uses it when x-hat starts from the model: every node starts from the same
  // model, so z's first row is also every other node's).
  virtual void start(const at::Tensor& z) {}

  // One round is two phases around the message exchange (algo/message_exchange.h):
  //  1. prepare: from the hosted numerators z [count, P], the message of every hosted node (its
  //     values as the receivers will see them, its kept positions and codes: what the wire
  //     payload carries, comm/message_codec.h); `round` seeds random compressors.
  //  2. combine: with `messages` [n, P], every node's message as its receivers see it (the rows
  //     of the hosted nodes and of their in-neighbours are set), z += the round's consensus
  //     update with L = eta (W - I) (in place).
  // The push-sum weights are mixed by the caller with the same L.
  virtual compress::Compressed prepare(at::Tensor& z, std::int64_t round) = 0;
  virtual void combine(at::Tensor& z, const at::Tensor& messages, const ConsensusStep& step) = 0;

  // What combine multiplied by L this round, [n, P]: the messages themselves, or (Choco) the
  // public copies they update. Fault corrections mix the same operand (algo/link_faults.h).
  virtual const at::Tensor& mixed_operand(const at::Tensor& messages) const { return messages; }

  // Both phases in one process that hosts every node (the messages are the prepared ones).
  compress::Compressed mix(at::Tensor& z, const ConsensusStep& step, std::int64_t round);

  // The algorithm's buffers for the hosted nodes, live rows [count, ...] (checkpoints).
  virtual std::map<std::string, at::Tensor> state() { return {}; }
  // Restores from a checkpoint's buffers of all n nodes ([n, ...] each, as state() names them):
  // the hosted rows, and whatever copies of other nodes' state the algorithm keeps.
  virtual void restore(const std::map<std::string, at::Tensor>& all_nodes) {}
};

// Builds an algorithm for the hosted `nodes` of `layout` with compressor `compressor` (D-PSGD
// requires "none": ConfigError otherwise). Buffers are allocated on `device`.
std::unique_ptr<GossipAlgorithm> make_gossip(Algorithm algorithm,
                                             std::unique_ptr<compress::Compressor> compressor,
                                             const NodeRange& nodes, const LayerLayout& layout,
                                             XhatInit xhat_init, at::Device device);

}  // namespace lpdt::algo
