#include "lpdt/dist/mpi_exchange.h"

#include <chrono>
#include <set>
#include <sstream>

#include "lpdt/comm/message_codec.h"
#include "lpdt/dist/placement.h"

namespace lpdt::dist {

MpiExchange::MpiExchange(std::shared_ptr<MpiComm> comm, const NodeRange& nodes,
                         const LayerLayout& layout, WireTraffic* traffic)
    : comm_(std::move(comm)),
      nodes_(nodes),
      layout_(layout),
      layer_numels_(comm::layout_numels(layout)),
      traffic_(traffic),
      messages_(at::zeros({nodes.total, layout.total_numel}, at::kFloat)),
      weights_(at::zeros({nodes.total}, at::kFloat)) {
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

  // Who sends what to whom this round.
  std::vector<std::int64_t> senders;  // remote in-neighbours of hosted nodes, increasing
  for (std::int64_t j = 0; j < n; ++j) {
    if (nodes_.contains(j)) continue;
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
  const auto weights = push_sum_weights.cpu();
  for (std::int64_t j = nodes_.first; j < nodes_.end(); ++j) {
    std::set<int> destinations;
    for (std::int64_t i = 0; i < n; ++i) {
      if (i != j && w[i][j] > 0 && !nodes_.contains(i)) destinations.insert(owner_rank(i, ranks, n));
    }
    if (destinations.empty()) continue;
    const std::int64_t row = j - nodes_.first;
    payloads.push_back(comm::encode(comm::node_message(
        sent, layout_, row, algo::wire_algorithm(algorithm), static_cast<std::uint64_t>(round),
        static_cast<std::uint32_t>(j), weights[row].item<float>())));
    for (int dest : destinations) {
      sends.push_back(comm_->start_send(payloads.back(), dest, static_cast<int>(j)));
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
  const auto deadline = comm_->deadline();
  comm::Expectations expect;
  expect.algorithm = algo::wire_algorithm(algorithm);
  expect.round = static_cast<std::uint64_t>(round);
  expect.layer_numels = layer_numels_;
  std::size_t pending = senders.size();
  std::vector<int> done(senders.size());
  std::vector<MPI_Status> statuses(senders.size());
  while (pending > 0) {
    int completed = 0;
    MpiComm::check(MPI_Testsome(static_cast<int>(receives.size()), receives.data(), &completed,
                                done.data(), statuses.data()),
                   "MPI_Testsome");
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
      if (MpiComm::Clock::now() > deadline) {
        std::ostringstream missing;
        for (std::size_t s = 0; s < senders.size(); ++s) {
          if (receives[s] != MPI_REQUEST_NULL) missing << " " << senders[s];
        }
        std::vector<MPI_Request> rest;
        for (auto& r : receives) {
          if (r != MPI_REQUEST_NULL) rest.push_back(r);
        }
        comm_->wait_all(rest, deadline,
                        "round " + std::to_string(round) + "'s payloads of nodes" + missing.str());
      }
      poll_pause();
    }
  }
  comm_->wait_all(sends, comm_->deadline(),
                  "round " + std::to_string(round) + "'s payloads to be taken by their receivers");
  traffic_->wait_s += std::chrono::duration<double>(MpiComm::Clock::now() - wait_start).count();
  return algo::ExchangedRound{messages_, weights_, received_bytes};
}

}  // namespace lpdt::dist
