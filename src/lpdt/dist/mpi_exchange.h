#pragma once
// The message exchange of one rank (algo/message_exchange.h) over MPI. Per round:
//  1. a receive is posted for every in-neighbour on another rank of every hosted node (tag =
//     the sender's global node id; MPI keeps the order of messages between two ranks, so round
//     r+1's payload never overtakes round r's);
//  2. every hosted node with out-neighbours on other ranks encodes its wire payload once
//     (comm/wire_payload.h: values, kept positions, push-sum weight) and sends it to each such
//     rank; edges between hosted nodes stay in memory;
//  3. each payload is decoded as it arrives, while the others are still in flight, and checked
//     as untrusted (sender, round, algorithm, layer sizes); every wait has a deadline.
// Sends are synchronous-mode (MPI_Issend): a send completes once its receiver has matched it.
// A rank whose payloads do not come, or which does not take ours, before the deadline is dead:
// its nodes are reported in ExchangedRound::unreachable (algo/link_faults.h drops their edges)
// and this rank neither waits for nor sends to it again.
// Only compiled when lpdt is built with MPI.
#include <memory>
#include <set>
#include <vector>

#include "lpdt/algo/message_exchange.h"
#include "lpdt/core/layer_layout.h"
#include "lpdt/dist/cluster.h"
#include "lpdt/dist/mpi_comm.h"

namespace lpdt::dist {

class MpiExchange final : public algo::MessageExchange {
 public:
  // comm: the gossip communicator (shared with nothing else); traffic: where the bytes moved
  // are counted; notices: the ranks known dead (shared with the cluster's gathers), and the
  // notices that tell the other ranks of the deaths found here.
  MpiExchange(std::shared_ptr<MpiComm> comm, const NodeRange& nodes, const LayerLayout& layout,
              WireTraffic* traffic, std::shared_ptr<DeathNotices> notices);

  algo::ExchangedRound exchange(const compress::Compressed& sent,
                                const at::Tensor& push_sum_weights, const at::Tensor& mixing,
                                std::int64_t round, algo::Algorithm algorithm) override;
  const NodeRange& nodes() const override { return nodes_; }

 private:
  std::shared_ptr<MpiComm> comm_;
  NodeRange nodes_;
  LayerLayout layout_;
  std::vector<std::uint32_t> layer_numels_;
  std::size_t max_payload_ = 0;
  WireTraffic* traffic_;
  at::Tensor messages_;  // [n, P] float32 (CPU)
  at::Tensor weights_;   // [n] float32
  std::vector<std::vector<std::uint8_t>> receive_buffers_;  // one per in-neighbour, reused
  std::shared_ptr<DeathNotices> notices_;
  // Payloads of sends abandoned to a dead rank: MPI may still read them, so they live on.
  std::vector<std::vector<std::vector<std::uint8_t>>> abandoned_payloads_;
};

}  // namespace lpdt::dist
