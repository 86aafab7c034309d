#include "lpdt/metrics/byte_ledger.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <string>

#include "lpdt/core/error.h"
#include "lpdt/core/json_error_text.h"

namespace lpdt::metrics {
namespace {

std::vector<std::int64_t> to_vector(const at::Tensor& t, std::int64_t n, const char* what) {
  // Byte counts: whole and never negative (a float tensor's 2.9 would be read as 2).
  if (!t.defined() || t.dim() != 1 || t.size(0) != n || at::isFloatingType(t.scalar_type()) ||
      t.scalar_type() == at::kBool) {
    std::ostringstream msg;
    msg << "byte ledger: " << what << " must be [" << n << "] integers, got ";
    if (t.defined()) {
      msg << t.sizes() << " " << t.scalar_type();
    } else {
      msg << "an undefined tensor";
    }
    throw UserError(msg.str());
  }
  const at::Tensor c = t.to(at::kCPU, at::kLong).contiguous();
  const auto* p = c.data_ptr<std::int64_t>();
  std::vector<std::int64_t> counts(p, p + n);
  if (std::any_of(counts.begin(), counts.end(), [](std::int64_t v) { return v < 0; })) {
    throw UserError(std::string("byte ledger: ") + what + " has a negative byte count");
  }
  return counts;
}

at::Tensor off_diagonal_edges(const at::Tensor& mixing) {
  LPDT_CHECK(mixing.dim() == 2 && mixing.size(0) == mixing.size(1), "mixing matrix must be [n, n]");
  const at::Tensor w = mixing.to(at::kCPU);
  at::Tensor edges = w.gt(0);
  edges.fill_diagonal_(false);
  return edges;  // [n, n] bool, edges[i][j]: j -> i
}

}  // namespace

ByteAccounting parse_byte_accounting(std::string_view name) {
  if (name == "lpdt") return ByteAccounting::kLpdt;
  if (name == "reference") return ByteAccounting::kReference;
  throw ConfigError("byte accounting must be 'lpdt' or 'reference', got '" + std::string(name) +
                    "'");
}

std::string_view to_string(ByteAccounting mode) {
  return mode == ByteAccounting::kLpdt ? "lpdt" : "reference";
}

std::int64_t reference_payload_bytes(std::int64_t values, bool sparse) {
  LPDT_CHECK(values >= 0, "negative value count");
  // Reference spec 3.4 (gossiper.py): dense 4*len(msg) with msg = [values | ps]; sparse
  // 4*(len/2) + len with msg = [values | indices | ps], len = 2V + 1, in Python 3 true division:
  // 2*(2V + 1) + 2V + 1 = 6V + 3.
  if (!sparse) return 4 * (values + 1);
  return 6 * values + 3;
}

at::Tensor out_degrees(const at::Tensor& mixing) {
  return off_diagonal_edges(mixing).sum(0, /*keepdim=*/false, at::kLong);
}

at::Tensor in_degrees(const at::Tensor& mixing) {
  return off_diagonal_edges(mixing).sum(1, /*keepdim=*/false, at::kLong);
}

EdgeBytes bytes_over_edges(const at::Tensor& mixing, const at::Tensor& payload) {
  const at::Tensor edges = off_diagonal_edges(mixing).to(at::kLong);  // [n, n]
  const at::Tensor p = payload.to(at::kCPU, at::kLong);
  LPDT_CHECK(p.dim() == 1 && p.size(0) == edges.size(0), "payload must be [n] bytes");
  EdgeBytes out;
  out.sent = edges.sum(0) * p;      // node j: payload_j per out-edge
  out.received = at::mv(edges, p);  // node i: sum over j -> i of payload_j
  return out;
}

ByteLedger::ByteLedger(std::int64_t num_nodes, ByteAccounting mode)
    : num_nodes_([num_nodes] {
        if (num_nodes < 1) {
          throw UserError("byte ledger: needs at least one node, got " +
                          std::to_string(num_nodes));
        }
        return num_nodes;
      }()),
      mode_(mode),
      sent_per_node_(static_cast<std::size_t>(num_nodes_), 0),
      received_per_node_(static_cast<std::size_t>(num_nodes_), 0) {}

void ByteLedger::add_to_totals(const std::vector<std::int64_t>& sent,
                               const std::vector<std::int64_t>& received) {
  for (std::int64_t i = 0; i < num_nodes_; ++i) {
    sent_per_node_[i] += sent[i];
    received_per_node_[i] += received[i];
  }
}

void ByteLedger::record_round(std::int64_t round, const at::Tensor& bytes_sent,
                              const at::Tensor& bytes_received) {
  if (!rounds_.empty()) {
    std::ostringstream msg;
    msg << "byte ledger: round " << round << " recorded after round " << rounds_.back().first
        << " (rounds must increase)";
    if (round <= rounds_.back().first) throw UserError(msg.str());
  }
  auto sent = to_vector(bytes_sent, num_nodes_, "bytes_sent");
  auto received = to_vector(bytes_received, num_nodes_, "bytes_received");
  rounds_.emplace_back(round, std::accumulate(sent.begin(), sent.end(), std::int64_t{0}));
  if (mode_ == ByteAccounting::kLpdt) {
    add_to_totals(sent, received);
    return;
  }
  // Reference lag: this call "returns" (counts) the previous round's bytes.
  if (!pending_sent_.empty()) add_to_totals(pending_sent_, pending_received_);
  pending_sent_ = std::move(sent);
  pending_received_ = std::move(received);
}

void ByteLedger::record_round_from_payload(std::int64_t round, const at::Tensor& mixing,
                                           const at::Tensor& payload) {
  const EdgeBytes b = bytes_over_edges(mixing, payload);
  record_round(round, b.sent, b.received);
}

std::int64_t ByteLedger::rounds_counted() const {
  // kReference's most recent round is pending until the next one or count_pending.
  return rounds_recorded() - (pending_sent_.empty() ? 0 : 1);
}

void ByteLedger::count_pending() {
  if (pending_sent_.empty()) return;
  add_to_totals(pending_sent_, pending_received_);
  pending_sent_.clear();
  pending_received_.clear();
}

std::int64_t ByteLedger::total_bytes_sent() const {
  return std::accumulate(sent_per_node_.begin(), sent_per_node_.end(), std::int64_t{0});
}

std::int64_t ByteLedger::bytes_sent_in_round(std::int64_t round) const {
  const auto it = std::lower_bound(
      rounds_.begin(), rounds_.end(), round,
      [](const std::pair<std::int64_t, std::int64_t>& r, std::int64_t v) { return r.first < v; });
  if (it == rounds_.end() || it->first != round) {
    throw UserError("byte ledger: round " + std::to_string(round) + " was not recorded");
  }
  return it->second;
}

double ByteLedger::mean_gb_sent_per_node() const {
  return static_cast<double>(total_bytes_sent()) / static_cast<double>(num_nodes_) / 1e9;
}

void ByteLedger::add(const ByteLedger& other) {
  if (other.num_nodes_ != num_nodes_ || other.mode_ != mode_ ||
      other.rounds_.size() != rounds_.size() ||
      other.pending_sent_.size() != pending_sent_.size()) {
    throw UserError("byte ledgers of different runs cannot be added (nodes " +
                    std::to_string(num_nodes_) + " vs " + std::to_string(other.num_nodes_) +
                    ", rounds " + std::to_string(rounds_.size()) + " vs " +
                    std::to_string(other.rounds_.size()) + ")");
  }
  for (std::size_t r = 0; r < rounds_.size(); ++r) {
    if (rounds_[r].first != other.rounds_[r].first) {
      throw UserError("byte ledgers recorded different rounds: " +
                      std::to_string(rounds_[r].first) + " vs " +
                      std::to_string(other.rounds_[r].first));
    }
    rounds_[r].second += other.rounds_[r].second;
  }
  add_to_totals(other.sent_per_node_, other.received_per_node_);
  for (std::size_t i = 0; i < pending_sent_.size(); ++i) {
    pending_sent_[i] += other.pending_sent_[i];
    pending_received_[i] += other.pending_received_[i];
  }
}

void ByteLedger::add_node_totals(const ByteLedger& other) {
  if (other.num_nodes_ != num_nodes_ || other.mode_ != mode_) {
    throw UserError("byte ledgers of different runs cannot be added (nodes " +
                    std::to_string(num_nodes_) + " vs " + std::to_string(other.num_nodes_) +
                    ", accounting " + std::string(to_string(mode_)) + " vs " +
                    std::string(to_string(other.mode_)) + ")");
  }
  add_to_totals(other.sent_per_node_, other.received_per_node_);
}

void ByteLedger::keep_only_nodes(std::int64_t first, std::int64_t count, bool keep_round_totals) {
  LPDT_CHECK(first >= 0 && count >= 0 && first + count <= num_nodes_,
             "keep_only_nodes: nodes out of range");
  const auto outside = [&](std::size_t i) {
    const auto node = static_cast<std::int64_t>(i);
    return node < first || node >= first + count;
  };
  for (std::size_t i = 0; i < sent_per_node_.size(); ++i) {
    if (!outside(i)) continue;
    sent_per_node_[i] = received_per_node_[i] = 0;
    if (!pending_sent_.empty()) pending_sent_[i] = pending_received_[i] = 0;
  }
  if (!keep_round_totals) {
    for (auto& round : rounds_) round.second = 0;
  }
}

nlohmann::json ByteLedger::to_json() const {
  nlohmann::json j;
  j["num_nodes"] = num_nodes_;
  j["mode"] = std::string(to_string(mode_));
  j["bytes_sent_per_node"] = sent_per_node_;
  j["bytes_received_per_node"] = received_per_node_;
  j["rounds"] = rounds_;
  j["pending_sent"] = pending_sent_;
  j["pending_received"] = pending_received_;
  return j;
}

ByteLedger ByteLedger::from_json(const nlohmann::json& j) {
  try {
    const auto num_nodes = j.at("num_nodes").get<std::int64_t>();
    if (num_nodes < 1 || num_nodes > (std::int64_t{1} << 20)) {
      throw UserError("byte ledger checkpoint: num_nodes " + std::to_string(num_nodes) +
                      " is not a node count");
    }
    ByteLedger ledger(num_nodes, parse_byte_accounting(j.at("mode").get<std::string>()));
    ledger.sent_per_node_ = j.at("bytes_sent_per_node").get<std::vector<std::int64_t>>();
    ledger.received_per_node_ = j.at("bytes_received_per_node").get<std::vector<std::int64_t>>();
    ledger.rounds_ = j.at("rounds").get<std::vector<std::pair<std::int64_t, std::int64_t>>>();
    ledger.pending_sent_ = j.at("pending_sent").get<std::vector<std::int64_t>>();
    ledger.pending_received_ = j.at("pending_received").get<std::vector<std::int64_t>>();
    const auto n = static_cast<std::size_t>(ledger.num_nodes_);
    if (ledger.sent_per_node_.size() != n || ledger.received_per_node_.size() != n ||
        (!ledger.pending_sent_.empty() && ledger.pending_sent_.size() != n) ||
        ledger.pending_received_.size() != ledger.pending_sent_.size()) {
      throw UserError("byte ledger checkpoint: per-node vectors must have num_nodes entries");
    }
    // Counts of bytes are never negative: one that is would make every total wrong.
    const auto negative = [](const std::vector<std::int64_t>& counts) {
      return std::any_of(counts.begin(), counts.end(), [](std::int64_t c) { return c < 0; });
    };
    bool any_negative = negative(ledger.sent_per_node_) || negative(ledger.received_per_node_) ||
                        negative(ledger.pending_sent_) || negative(ledger.pending_received_);
    bool negative_round = false;
    for (const auto& [round, sent] : ledger.rounds_) {
      any_negative |= sent < 0;
      negative_round |= round < 0;
    }
    if (any_negative) throw UserError("byte ledger checkpoint: a negative byte count");
    if (negative_round) throw UserError("byte ledger checkpoint: a negative round");
    // Rounds are recorded in increasing order, which bytes_sent_in_round's search relies on.
    for (std::size_t r = 1; r < ledger.rounds_.size(); ++r) {
      if (ledger.rounds_[r].first <= ledger.rounds_[r - 1].first) {
        throw UserError("byte ledger checkpoint: round " +
                        std::to_string(ledger.rounds_[r].first) + " recorded after round " +
                        std::to_string(ledger.rounds_[r - 1].first) + " (rounds increase)");
      }
    }
    return ledger;
  } catch (const nlohmann::json::exception& e) {
    throw UserError(std::string("byte ledger checkpoint is malformed: ") + json_error_text(e));
  }
}

}  // namespace lpdt::metrics
