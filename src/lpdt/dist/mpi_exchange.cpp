#include "lpdt/dist/mpi_exchange.h"

#include <chrono>
#include <cstdio>
#include <set>
#include <sstream>

#include "lpdt/comm/message_codec.h"
#include "lpdt/dist/placement.h"
#include "lpdt/dist/stuck_call_watchdog.h"

namespace lpdt::dist {

MpiExchange::MpiExchange(std::shared_ptr<MpiComm> comm, const NodeRange& nodes,
                         const LayerLayout& layout, WireTraffic* traffic,
                         std::shared_ptr<DeathNotices> notices)
    : comm_(std::move(comm)),
      nodes_(nodes),
      layout_(layout),
      layer_numels_(comm::layout_numels(layout)),
      traffic_(traffic),
      messages_(at::zeros({nodes.total, layout.total_numel}, at::kFloat)),
      weights_(at::zeros({nodes.total}, at::kFloat)),
      notices_(std::move(notices)) {
  // No valid payload is larger than every layer sent sparse with 32-bit indices and float32
  // values (plus the int8 parameters): receive buffers of this size never truncate one.
  max_payload_ = static_cast<std::size_t>(
      comm::dense_payload_bytes(compress::MessageValues::kFloat32, layout) +
      4 * layout.total_numel + 8 * static_cast<std::int64_t>(layout.segments.size()));
}

algo::ExchangedRound MpiExchange::exchange(const compress::Compressed& sent,
                                           const at::Tensor& push_sum_weights,
                                           const at::Tensor& mixing, std::int64_t round,
                                           algo::Algorithm algorithm) {
  LPDT_CHECK(sent.dense.is_cpu() && mixing.is_cpu(),
             "the MPI exchange runs on CPU tensors (run.device = 'cpu')");
  const std::int64_t n = nodes_.total;
  const int ranks = comm_->size();
  const auto w = mixing.accessor<float, 2>();  // w[i][j] > 0: edge j -> i
  const auto rank_dead = [&](std::int64_t node) {
    return notices_->dead(owner_rank(node, ranks, n));
  };

  notices_->absorb();
  // Who sends what to whom this round.
  std::vector<std::int64_t> senders;  // remote in-neighbours of hosted nodes, increasing
  for (std::int64_t j = 0; j < n; ++j) {
    if (nodes_.contains(j) || rank_dead(j)) continue;
    for (std::int64_t i = nodes_.first; i < nodes_.end(); ++i) {
      if (i != j && w[i][j] > 0) {
        senders.push_back(j);
        break;
      }
    }
  }
  if (receive_buffers_.size() < senders.size()) receive_buffers_.resize(senders.size());
  std::vector<MPI_Request> receives(senders.size(), MPI_REQUEST_NULL);
  for (std::size_t s = 0; s < senders.size(); ++s) {
    receive_buffers_[s].resize(max_payload_);
    receives[s] = comm_->start_receive(receive_buffers_[s], owner_rank(senders[s], ranks, n),
                                       static_cast<int>(senders[s]));
  }

  std::vector<std::vector<std::uint8_t>> payloads;
  payloads.reserve(static_cast<std::size_t>(nodes_.count));
  std::vector<MPI_Request> sends;
  std::vector<int> send_destinations;
  const auto weights = push_sum_weights.cpu();
  for (std::int64_t j = nodes_.first; j < nodes_.end(); ++j) {
    std::set<int> destinations;
    for (std::int64_t i = 0; i < n; ++i) {
      if (i != j && w[i][j] > 0 && !nodes_.contains(i) && !rank_dead(i)) {
        destinations.insert(owner_rank(i, ranks, n));
      }
    }
    if (destinations.empty()) continue;
    const std::int64_t row = j - nodes_.first;
    payloads.push_back(comm::encode(comm::node_message(
        sent, layout_, row, algo::wire_algorithm(algorithm), static_cast<std::uint64_t>(round),
        static_cast<std::uint32_t>(j), weights[row].item<float>())));
    for (int dest : destinations) {
      sends.push_back(comm_->start_synchronous_send(payloads.back(), dest, static_cast<int>(j)));
      send_destinations.push_back(dest);
      traffic_->payloads_sent += 1;
      traffic_->bytes_sent += static_cast<std::int64_t>(payloads.back().size());
    }
  }

  // The hosted rows stay in memory.
  messages_.narrow(0, nodes_.first, nodes_.count).copy_(sent.dense);
  weights_.narrow(0, nodes_.first, nodes_.count).copy_(weights);
  at::Tensor received_bytes = at::zeros({n}, at::kLong);

  // Decode each payload as it arrives.
  const auto wait_start = MpiComm::Clock::now();
  PeerDeadline deadline(*comm_, *notices_);
  comm::Expectations expect;
  expect.algorithm = algo::wire_algorithm(algorithm);
  expect.round = static_cast<std::uint64_t>(round);
  expect.layer_numels = layer_numels_;
  std::size_t pending = senders.size();
  std::vector<int> done(senders.size());
  std::vector<MPI_Status> statuses(senders.size());
  while (pending > 0) {
    int completed = 0;
    {
      const WatchedMpiCall watched("MPI_Testsome");
      MpiComm::check(MPI_Testsome(static_cast<int>(receives.size()), receives.data(), &completed,
                                  done.data(), statuses.data()),
                     "MPI_Testsome");
    }
    if (completed == MPI_UNDEFINED) break;
    for (int c = 0; c < completed; ++c) {
      const std::size_t s = static_cast<std::size_t>(done[c]);
      const std::int64_t j = senders[s];
      int count = 0;
      MpiComm::check(MPI_Get_count(&statuses[c], MPI_BYTE, &count), "MPI_Get_count");
      expect.sender = static_cast<std::uint32_t>(j);
      const comm::Message message = comm::decode(
          std::span<const std::uint8_t>(receive_buffers_[s].data(), static_cast<std::size_t>(count)),
          expect);
      at::Tensor row = messages_[j];
      comm::read_message_values(message, layout_, row);
      weights_[j] = message.push_sum_weight;
      received_bytes[j] = count;
      traffic_->payloads_received += 1;
      traffic_->bytes_received += count;
      --pending;
    }
    if (completed == 0) {
      // Senders another rank found dead (a notice taken here, or by the deadline below): stop
      // waiting for them.
      notices_->absorb();
      for (std::size_t s = 0; s < senders.size(); ++s) {
        if (receives[s] != MPI_REQUEST_NULL && rank_dead(senders[s])) {
          const WatchedMpiCall watched("MPI_Cancel");
          MPI_Cancel(&receives[s]);
          MPI_Wait(&receives[s], MPI_STATUS_IGNORE);
          --pending;
        }
      }
      // A peer late because it waited out a death gets one more deadline (PeerDeadline).
      std::set<int> awaited;
      for (std::size_t s = 0; s < senders.size(); ++s) {
        if (receives[s] != MPI_REQUEST_NULL) awaited.insert(owner_rank(senders[s], ranks, n));
      }
      if (deadline.expired(awaited)) break;
      poll_pause();
    }
  }
  // Payloads that did not come before the deadline: their senders' ranks are dead.
  std::set<int> newly_dead;
  for (std::size_t s = 0; s < senders.size(); ++s) {
    if (receives[s] == MPI_REQUEST_NULL) continue;
    const WatchedMpiCall watched("MPI_Cancel");
    MPI_Cancel(&receives[s]);
    MPI_Wait(&receives[s], MPI_STATUS_IGNORE);  // a cancelled receive completes at once
    newly_dead.insert(owner_rank(senders[s], ranks, n));
  }
  // Sends not taken before the deadline: their receivers' ranks are dead.
  const std::vector<std::size_t> abandoned =
      comm_->wait_or_abandon(sends, send_destinations, deadline);
  for (const std::size_t a : abandoned) newly_dead.insert(send_destinations[a]);
  if (!abandoned.empty()) abandoned_payloads_.push_back(std::move(payloads));
  algo::ExchangedRound heard{messages_, weights_, received_bytes, {}};
  for (const int r : newly_dead) {
    if (!notices_->declare(r)) continue;
    const NodeRange block = hosted_nodes(r, ranks, n);
    std::fprintf(stderr,
                 "rank %d: rank %d (nodes %lld .. %lld) did not answer in round %lld within "
                 "%.3g s (run.receive_timeout_s): treating it as dead and dropping its edges\n",
                 comm_->rank(), r, static_cast<long long>(block.first),
                 static_cast<long long>(block.end() - 1), static_cast<long long>(round),
                 comm_->timeout_s());
  }
  // Every dead rank's nodes (this round's and earlier ones', also those rank 0's gathers found).
  for (const int r : notices_->dead_ranks()) {
    const NodeRange block = hosted_nodes(r, ranks, n);
    for (std::int64_t i = block.first; i < block.end(); ++i) heard.unreachable.push_back(i);
  }
  traffic_->wait_s += std::chrono::duration<double>(MpiComm::Clock::now() - wait_start).count();
  return heard;
}

}  // namespace lpdt::dist
