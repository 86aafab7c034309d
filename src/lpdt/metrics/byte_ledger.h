#pragma once
// Bytes of gossip payloads, per node and per round (docs/algorithms.md, "Byte accounting").
//
// Everything here counts the bytes of what a node sends (or would send) to each out-neighbour:
// the compressed values, their indices when sparse, and the push-sum weight that rides with every
// message. Two accounting modes:
//
//  - kLpdt: the encoded wire payload, byte for byte (comm/wire_payload.h; its size per node is
//    computed by comm::payload_bytes and tested equal to the encoder's output). Every recorded
//    round is counted.
//  - kReference: exactly the official code (reference spec 3.4). Dense: 4 * (P + 1) per
//    out-edge. Sparse: 6 * V + 3 per out-edge (V kept values; the code counts the index half of
//    its float32 message at 1 byte per element). And its lag: `transfer_params` returns the bytes
//    of the previous completed round, so the first round counts 0 and R recorded rounds count
//    R - 1 (the most recent round stays pending). This reproduces the paper's Table 3.
#include <ATen/ATen.h>

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string_view>
#include <utility>
#include <vector>

namespace lpdt::metrics {

enum class ByteAccounting { kLpdt, kReference };

// "lpdt" or "reference"; ConfigError otherwise.
ByteAccounting parse_byte_accounting(std::string_view name);
std::string_view to_string(ByteAccounting mode);

// Bytes of ONE message on ONE out-edge as the official code counts them (kReference):
//   dense:  values = P (every scalar of the model)
//   sparse: values = V (kept values, summed over segments)
std::int64_t reference_payload_bytes(std::int64_t values, bool sparse);

// Out-degree of node j = number of i != j with mixing[i][j] > 0 (edge j -> i); in-degree of i =
// number of j != i with mixing[i][j] > 0. mixing: [n, n] float, any device. Returns [n] int64 CPU.
at::Tensor out_degrees(const at::Tensor& mixing);
at::Tensor in_degrees(const at::Tensor& mixing);

// Per-node bytes of one round from each node's per-message payload size.
struct EdgeBytes {
  at::Tensor sent;      // [n] int64 CPU: payload_j * out_degree_j
  at::Tensor received;  // [n] int64 CPU: sum over in-neighbours j of payload_j
};
// mixing: [n, n]; payload: [n] int64 (bytes of one message of each node).
EdgeBytes bytes_over_edges(const at::Tensor& mixing, const at::Tensor& payload);

// Accumulates the bytes every node sends and receives, round by round.
class ByteLedger {
 public:
  ByteLedger(std::int64_t num_nodes, ByteAccounting mode);

  ByteAccounting mode() const { return mode_; }
  std::int64_t num_nodes() const { return num_nodes_; }

  // Records one round. bytes_sent / bytes_received: [n] int64 (any device), summed over each
  // node's out-edges / in-edges. Rounds must be recorded in increasing order.
  void record_round(std::int64_t round, const at::Tensor& bytes_sent,
                    const at::Tensor& bytes_received);
  // Convenience: bytes_over_edges(mixing, payload) then record_round.
  void record_round_from_payload(std::int64_t round, const at::Tensor& mixing,
                                 const at::Tensor& payload);

  std::int64_t rounds_recorded() const { return static_cast<std::int64_t>(rounds_.size()); }
  // Rounds included in the totals: all of them (kLpdt), all but the most recent (kReference,
  // until count_pending).
  std::int64_t rounds_counted() const;
  // kReference: counts the most recent round now. The official code's final gossip-averaging
  // loop (reference spec 5.4) counts, with each round it starts, the round before it, so that
  // every round it applies is counted, the last training round included: the reference
  // protocol ends with this call. No effect in kLpdt.
  void count_pending();

  // Counted totals per node (the totals the mode defines, see the header comment).
  const std::vector<std::int64_t>& bytes_sent_per_node() const { return sent_per_node_; }
  const std::vector<std::int64_t>& bytes_received_per_node() const { return received_per_node_; }
  std::int64_t total_bytes_sent() const;

  // The bytes all nodes together sent in `round` (what actually went out that round, whether or
  // not the mode has counted it yet). UserError if the round was not recorded.
  std::int64_t bytes_sent_in_round(std::int64_t round) const;
  // (round, bytes sent by all nodes) for every recorded round, in order.
  const std::vector<std::pair<std::int64_t, std::int64_t>>& rounds() const { return rounds_; }

  // Mean over nodes of the counted bytes sent, in GB (1e9 bytes): the paper's "Data (GB)".
  double mean_gb_sent_per_node() const;

  // Multi-process runs: each rank records its own nodes' bytes in a ledger of all n nodes (the
  // others' entries stay 0); the ranks' ledgers add up to the simulator's. add() sums another
  // ledger of the same nodes, mode and recorded rounds into this one (UserError otherwise).
  void add(const ByteLedger& other);
  // The per-node totals alone of a ledger of the same nodes and mode that may have stopped
  // earlier: a dead rank's last report. Its rounds are not added (UserError on another run's).
  void add_node_totals(const ByteLedger& other);
  // A rank continuing from a whole-run ledger: keeps the totals of nodes [first, first + count)
  // only, and the per-round totals only if keep_round_totals (one rank keeps them).
  void keep_only_nodes(std::int64_t first, std::int64_t count, bool keep_round_totals);

  // Checkpointing: everything needed to continue counting.
  nlohmann::json to_json() const;
  static ByteLedger from_json(const nlohmann::json& j);

 private:
  void add_to_totals(const std::vector<std::int64_t>& sent,
                     const std::vector<std::int64_t>& received);

  std::int64_t num_nodes_;
  ByteAccounting mode_;
  std::vector<std::int64_t> sent_per_node_;
  std::vector<std::int64_t> received_per_node_;
  std::vector<std::pair<std::int64_t, std::int64_t>> rounds_;
  // kReference: the most recent round, counted when the next one is recorded.
  std::vector<std::int64_t> pending_sent_;
  std::vector<std::int64_t> pending_received_;
};

}  // namespace lpdt::metrics
