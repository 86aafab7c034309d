#pragma once
// One object that runs a whole decentralized training iteration over node-batched parameters:
// push-sum de-biasing, the local optimizer (SGD/Nesterov, Adam/AdamW or QGM), one gossip round of
// D-PSGD, DeepSqueeze (Sparse-Push) or Choco-SGD (Quant-SGP) with a compressor, and byte
// accounting.
// Equations and citations: docs/algorithms.md.
//
// Per iteration, the trainer calls
//   const double lr = schedule.lr(epoch, it, steps_per_epoch);
//   ... forward/backward on x (the de-biased parameters [n, P]) -> grad [n, P] ...
//   opt.step(x, grad, mixing /* W of this round, [n, n] */, lr, round, ledger);
// and x holds the next iteration's de-biased parameters. Gossip-only rounds (the official code's
// final averaging) use gossip_round(x, mixing, round, ledger).
#include <ATen/ATen.h>
#include <torch/arg.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lpdt/algo/gossip.h"
#include "lpdt/algo/link_faults.h"
#include "lpdt/algo/local_adam.h"
#include "lpdt/algo/local_sgd.h"
#include "lpdt/algo/message_exchange.h"
#include "lpdt/algo/push_sum.h"
#include "lpdt/algo/qgm.h"
#include "lpdt/compress/compressor.h"
#include "lpdt/core/layer_layout.h"
#include "lpdt/core/node_range.h"
#include "lpdt/metrics/byte_ledger.h"

namespace lpdt::algo {

struct DecentralizedOptions {
  // "dpsgd", "deepsqueeze" (sparse-push), "choco" (quant-sgp); see parse_algorithm.
  TORCH_ARG(std::string, algorithm) = "choco";
  // Compressor of the gossiped messages ("none", "topk", "randomk" + keep fraction).
  TORCH_ARG(compress::CompressorOptions, compressor) = {};
  // Consensus step size eta (the paper's gamma in Alg. 1 l.7; official --eta), in (0, 1].
  TORCH_ARG(double, eta) = 1.0;
  // Local optimizer (spec 4.1), or the QGM beta when qgm is on (spec 4.2).
  TORCH_ARG(double, momentum) = 0.9;
  TORCH_ARG(bool, nesterov) = true;
  TORCH_ARG(double, weight_decay) = 1e-4;
  // Quasi-global momentum (Lin et al. 2021) instead of local momentum.
  TORCH_ARG(bool, qgm) = false;
  // Local optimizer: "sgd" (momentum, nesterov above), "adam" or "adamw" (local_adam.h: beta1,
  // beta2, eps below; momentum and nesterov unused). "adam"/"adamw" with qgm is a ConfigError.
  TORCH_ARG(std::string, optimizer) = "sgd";
  TORCH_ARG(double, beta1) = 0.9;
  TORCH_ARG(double, beta2) = 0.999;
  TORCH_ARG(double, eps) = 1e-8;
  // Choco's x-hat start: "zero" (official) or "model".
  TORCH_ARG(std::string, xhat_init) = "zero";
  // Byte accounting of the ledger this optimizer records into: "lpdt" or "reference".
  TORCH_ARG(std::string, accounting) = "lpdt";
};

// [P] bool: true on the columns of the segments whose flag is true (the trainable mask).
at::Tensor columns_mask(const LayerLayout& layout, const std::vector<bool>& per_segment);

class DecentralizedOptimizer {
 public:
  // ConfigError for a bad option (names the value). Buffers live on `device`. Every node in
  // this process (the simulator).
  DecentralizedOptimizer(const DecentralizedOptions& options, std::int64_t num_nodes,
                         const LayerLayout& layout, at::Device device = at::kCPU);
  // The nodes exchange->nodes() of a multi-process run: every [n, P] buffer below has
  // nodes.count rows (global nodes first .. first + count - 1); mixing matrices stay [n, n]
  // with n = nodes.total. The compressor's options.first_node must be nodes.first.
  DecentralizedOptimizer(const DecentralizedOptions& options, const LayerLayout& layout,
                         at::Device device, std::unique_ptr<MessageExchange> exchange);

  // Injected faults and dead peers (algo/link_faults.h): every later round drops, delays and
  // renormalises as `faults` says. Its hosted nodes must be this optimizer's.
  void set_faults(std::unique_ptr<LinkFaults> faults);
  const LinkFaults* faults() const { return faults_.get(); }

  // Restricts the local update (and weight decay) to the columns where `trainable` ([P] bool or
  // 0/1 float) is true; the other columns are still gossiped. Undefined tensor: every column.
  void set_trainable(const at::Tensor& trainable);

  // One training iteration (docs/algorithms.md, "One iteration"):
  //   z = x * ps; local step on z with grad; gossip round on (z, ps) with W = mixing;
  //   x = z / ps; [qgm] update m; record the bytes of the round in `ledger`.
  // x: [n, P] float32 de-biased parameters, updated in place. grad: [n, P] float32, the gradient
  // at x. mixing: [n, n] float32 column-stochastic with self-loops. lr: this iteration's lr.
  // round: the global round index (seeds random compressors; ledger key).
  void step(at::Tensor& x, const at::Tensor& grad, const at::Tensor& mixing, double lr,
            std::int64_t round, metrics::ByteLedger& ledger);

  // A gossip round without a local step (the official code's final averaging rounds, spec 5.4).
  // Momentum, Adam and QGM buffers are not touched.
  void gossip_round(at::Tensor& x, const at::Tensor& mixing, std::int64_t round,
                    metrics::ByteLedger& ledger);

  // The host-side bookkeeping of a step whose device work was replayed from a captured CUDA graph
  // (the capture ran the host code once): counts the round and records in `ledger` the bytes of
  // the round the capture recorded. mixing: as step's (same sparsity pattern as at capture).
  void account_replayed_round(const at::Tensor& mixing, std::int64_t round,
                              metrics::ByteLedger& ledger);

  // A ledger with this optimizer's accounting mode, for all n nodes (a rank records its own
  // nodes' bytes only; the ranks' ledgers add up, ByteLedger::add).
  metrics::ByteLedger make_ledger() const;

  // Every buffer of the hosted nodes, live rows: "ps" [count], "rounds" (0-d int64, rounds
  // done), "momentum" [count, P] (local momentum on), "qgm_buffer" [count, P] (qgm),
  // "adam_m", "adam_v" [count, P] and "adam_step" (0-d int64, steps done) (adam / adamw),
  // "error_feedback" [count, P] (deepsqueeze), "xhat" [count, P] (choco).
  std::map<std::string, at::Tensor> state();
  // Restores from a checkpoint's tensors of ALL n nodes (the rows of state(), [n, ...]): the
  // hosted rows, and the algorithm's copies of other nodes' state (Choco's x-hat). UserError on
  // a missing name or a shape mismatch.
  void load_state(const std::map<std::string, at::Tensor>& saved);

  const DecentralizedOptions& options() const { return options_; }
  Algorithm algorithm() const { return algorithm_; }
  const at::Tensor& push_sum_weights() const { return push_sum_.weights(); }
  const GossipAlgorithm& gossip() const { return *gossip_; }
  std::int64_t rounds_done() const;
  const NodeRange& nodes() const { return nodes_; }

 private:
  // Everything a call is given, checked before anything changes, so that a refused call leaves x
  // and the optimizer's state as they were: UserError naming the argument and what it must be.
  // A mixing matrix's values are checked once per tensor (and again after an in-place change).
  void check_inputs(const at::Tensor& x, const at::Tensor& mixing, std::int64_t round,
                    const metrics::ByteLedger& ledger);
  at::Tensor checked_mixing_;
  std::uint32_t checked_mixing_version_ = 0;
  // The gossip round on numerators x (in place) and the byte record.
  void consensus(at::Tensor& z, const at::Tensor& mixing, std::int64_t round,
                 metrics::ByteLedger& ledger);

  DecentralizedOptions options_;
  Algorithm algorithm_;
  metrics::ByteAccounting accounting_;
  std::unique_ptr<MessageExchange> exchange_;
  NodeRange nodes_;
  std::int64_t num_nodes_;  // nodes_.total
  LayerLayout layout_;
  at::Device device_;
  PushSum push_sum_;
  std::optional<LocalSgd> sgd_;
  std::optional<LocalAdam> adam_;
  std::optional<QuasiGlobalMomentum> qgm_;
  std::unique_ptr<GossipAlgorithm> gossip_;
  std::unique_ptr<LinkFaults> faults_;
  at::Tensor trainable_;  // undefined or [1, P] float32 0/1
  at::Tensor rounds_;     // 0-d int64 CPU
  // The byte ledger reads the mixing matrix on the host. A device mixing matrix is copied once
  // per distinct tensor (a static graph's: once per run), so that a step neither synchronises
  // with the device nor copies inside a captured CUDA graph.
  const at::Tensor& host_mixing(const at::Tensor& mixing);
  at::Tensor device_mixing_seen_;
  at::Tensor host_mixing_;
  // [n] int64 CPU: payload bytes per node of the last consensus round (the hosted nodes' and
  // their in-neighbours'). A captured step's size is the same at every replay (dense messages:
  // no CUDA graph captures a sparse step).
  at::Tensor last_payload_;
  // Records a round's bytes: every node's when all are hosted, else the hosted nodes' only.
  // Over the edges that carry messages: none to or from a dead node (docs/faults.md).
  void record_bytes(std::int64_t round, const at::Tensor& mixing, metrics::ByteLedger& ledger);
  // The host mixing matrix without the dead nodes' edges (their rows and columns zeroed), kept
  // while the matrix and the dead nodes stay the same.
  const at::Tensor& live_edges(const at::Tensor& host);
  at::Tensor live_edges_source_;
  std::size_t live_edges_dead_count_ = 0;
  at::Tensor live_edges_;
};

}  // namespace lpdt::algo
