#pragma once
// How the messages of one gossip round reach their receivers: between the two phases of a round
// (GossipAlgorithm::prepare, then combine), every hosted node's message and push-sum weight go to
// its out-neighbours, and the messages of the hosted nodes' in-neighbours come in. In the
// simulator every node is in one process and nothing moves; a rank of a multi-process run sends
// real wire payloads to the other ranks (dist/mpi_exchange.h) and keeps edges between its own
// nodes in memory.
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "lpdt/algo/gossip.h"
#include "lpdt/comm/wire_payload.h"
#include "lpdt/compress/compressor.h"
#include "lpdt/core/node_range.h"

namespace lpdt::algo {

// What the hosted nodes hear in one round. Rows are global node ids; the rows of the hosted
// nodes and of their in-neighbours are set, the others are zero or stale and never read.
struct ExchangedRound {
  at::Tensor messages;          // [n, P] float32: each message's values as its receivers see them
  at::Tensor push_sum_weights;  // [n] float32: the weight each message carried
  // [n] int64 CPU: encoded bytes of each message received from another process (0 elsewhere);
  // undefined when every node is hosted here.
  at::Tensor received_payload_bytes;
  // Nodes this process found dead in this round (no payload, or a send not taken, before the
  // deadline: a multi-process run's detection, algo/link_faults.h). Empty in the simulator.
  std::vector<std::int64_t> unreachable;
};

class MessageExchange {
 public:
  virtual ~MessageExchange() = default;
  // sent: the hosted nodes' messages (rows [count, P], GossipAlgorithm::prepare);
  // push_sum_weights: their weights before the round [count]; mixing: this round's W [n, n]
  // float32 on the CPU (who sends to whom: edge j -> i where W[i][j] > 0).
  virtual ExchangedRound exchange(const compress::Compressed& sent,
                                  const at::Tensor& push_sum_weights, const at::Tensor& mixing,
                                  std::int64_t round, Algorithm algorithm) = 0;
  // The nodes this exchange serves.
  virtual const NodeRange& nodes() const = 0;
};

// The algorithm field of a wire payload's header.
inline comm::WireAlgorithm wire_algorithm(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kDpsgd:
      return comm::WireAlgorithm::kDpsgd;
    case Algorithm::kDeepSqueeze:
      return comm::WireAlgorithm::kDeepSqueeze;
    case Algorithm::kChoco:
      return comm::WireAlgorithm::kChoco;
  }
  return comm::WireAlgorithm::kChoco;
}

// Every node in this process: the prepared messages are what every receiver sees.
class InProcessExchange final : public MessageExchange {
 public:
  explicit InProcessExchange(std::int64_t num_nodes) : nodes_(NodeRange::all(num_nodes)) {}
  ExchangedRound exchange(const compress::Compressed& sent, const at::Tensor& push_sum_weights,
                          const at::Tensor& mixing, std::int64_t round,
                          Algorithm algorithm) override {
    // The weights are copied: PushSum::mix updates them in place from this very vector.
    return ExchangedRound{sent.dense, push_sum_weights.clone(), at::Tensor(), {}};
  }
  const NodeRange& nodes() const override { return nodes_; }

 private:
  NodeRange nodes_;
};

}  // namespace lpdt::algo
