#include "lpdt/algo/link_faults.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "lpdt/core/error.h"

namespace lpdt::algo {

void FaultCounts::add(const FaultCounts& other) {
  messages_lost += other.messages_lost;
  messages_late += other.messages_late;
  late_rounds += other.late_rounds;
  messages_in_flight += other.messages_in_flight;
  dead_edge_rounds += other.dead_edge_rounds;
  for (const auto& [node, round] : other.dead_nodes) {
    const auto it = dead_nodes.find(node);
    if (it == dead_nodes.end() || round < it->second) dead_nodes[node] = round;
  }
}

FaultCounts LinkFaults::counts() const {
  FaultCounts now = counts_;
  now.messages_in_flight = static_cast<std::int64_t>(held_.size());
  return now;
}

void LinkFaults::restore_counts(const FaultCounts& counts) {
  counts_ = counts;
  counts_.messages_in_flight = 0;  // counts() takes it from the held messages
}

void LinkFaults::restore_dead(const FaultCounts& counts) {
  for (const auto& [node, round] : counts.dead_nodes) dead_.insert(node);
}

LinkFaults::LinkFaults(FaultPlan plan, const NodeRange& hosted, bool choco, bool kills_from_plan)
    : plan_(std::move(plan)), hosted_(hosted), choco_(choco), kills_from_plan_(kills_from_plan) {}

void LinkFaults::begin_round(std::int64_t round, const at::Tensor& mixing, ExchangedRound& heard) {
  LPDT_CHECK(mixing.is_cpu() && mixing.dim() == 2 && mixing.size(0) == hosted_.total,
             "LinkFaults: mixing must be the [n, n] CPU matrix of the round");
  const std::int64_t n = hosted_.total;
  rows_.clear();
  cols_.clear();
  numerator_delta_.clear();
  push_sum_delta_.clear();
  terms_.clear();
  const auto see_dead = [&](std::int64_t node) {
    if (dead_.insert(node).second) counts_.dead_nodes.emplace(node, round);
  };
  if (kills_from_plan_) {
    for (const std::int64_t node : plan_.options().kill_nodes) {
      if (node < n && plan_.killed(node, round)) see_dead(node);
    }
  }
  for (const std::int64_t node : heard.unreachable) see_dead(node);
  // A dead node's message and weight are stale (or its last words): nobody mixes them any more,
  // and Choco's copies of its xh stop changing. Zero, so that the fault-free combine adds
  // nothing that the correction must take back (which would not be exact in floating point).
  for (const std::int64_t node : dead_) {
    heard.messages[node].zero_();
    heard.push_sum_weights[node].zero_();
  }

  // Messages arriving now (sent by a node that was alive then).
  std::vector<Held> still_held;
  for (Held& h : held_) {
    if (dead(h.receiver)) continue;  // nobody to take it
    if (h.due_round <= round) {
      if (choco_) {
        known_weight(h.receiver, h.sender, h.sent_round, h.push_sum_weight);
      } else {
        terms_.push_back(Term{h.receiver, h.weight, h.values, h.push_sum_weight, true, true});
      }
    } else {
      still_held.push_back(std::move(h));
    }
  }
  held_ = std::move(still_held);

  const auto w = mixing.accessor<float, 2>();  // w[i][j]: edge j -> i
  const auto adjust = [&](std::int64_t i, std::int64_t j, float numerator, float push_sum) {
    rows_.push_back(i);
    cols_.push_back(j);
    numerator_delta_.push_back(numerator);
    push_sum_delta_.push_back(push_sum);
  };
  const auto all_ps = heard.push_sum_weights.cpu();
  for (std::int64_t i = hosted_.first; i < hosted_.end(); ++i) {
    // A dead node's edges are dropped in surviving_mixing, which the combine takes as W.
    if (dead(i)) continue;
    for (std::int64_t j = 0; j < n; ++j) {
      if (j == i) continue;
      const float wij = w[i][j];
      if (dead(j)) {
        if (wij > 0) ++counts_.dead_edge_rounds;  // the receiver hears nothing from it
        continue;
      }
      if (wij <= 0 || !plan_.options().any_link_fault()) continue;
      const MessageFate fate = plan_.fate(round, j, i);
      if (fate.late_rounds == 0) {
        if (choco_) known_weight(i, j, round, all_ps[j].item<float>());
        continue;
      }
      counts_.messages_lost += fate.losses;
      counts_.messages_late += 1;
      counts_.late_rounds += fate.late_rounds;
      held_.push_back(Held{i, j, round, round + fate.late_rounds, wij, all_ps[j].item<float>(),
                           heard.messages[j].clone()});
      if (choco_) {
        // Choco mixes its copy of xh_j with the full weight W_ij, and so the last push-sum
        // weight of j that i knows (initially 1): the same stale view for both.
        const auto it = last_weight_.find({i, j});
        const float known = it == last_weight_.end() ? 1.0f : it->second.second;
        terms_.push_back(Term{i, wij, at::Tensor(), known - all_ps[j].item<float>(), false, true});
      } else {
        adjust(i, j, -wij, -wij);  // not mixed now: the message's share and its weight
      }
    }
  }

  if (choco_) {
    // i's copy of xh_j lacks the q_j still in flight: mix (xh_j - lag) with this round's W_ij.
    for (const Held& h : held_) {
      const float wij = w[h.receiver][h.sender];
      if (wij > 0 && !dead(h.sender)) {
        terms_.push_back(Term{h.receiver, -wij, h.values, 0.0f, true, false});
      }
    }
  }
}

const at::Tensor& LinkFaults::surviving_mixing(const at::Tensor& mixing) {
  LPDT_CHECK(mixing.is_cpu() && mixing.dim() == 2 && mixing.size(0) == hosted_.total &&
                 mixing.size(1) == hosted_.total && mixing.scalar_type() == at::kFloat,
             "LinkFaults: mixing must be the [n, n] float32 CPU matrix of the round");
  if (dead_.empty()) return mixing;
  if (surviving_.defined() && surviving_source_.is_same(mixing) &&
      surviving_dead_count_ == dead_.size()) {
    return surviving_;  // dead nodes only join the set, so its size tells whether it changed
  }
  const std::int64_t n = hosted_.total;
  surviving_ = mixing.clone();
  const auto w = mixing.accessor<float, 2>();  // w[i][j]: edge j -> i
  auto out = surviving_.accessor<float, 2>();
  for (std::int64_t i = 0; i < n; ++i) {
    if (dead(i)) {  // a dead node keeps its state: its row is e_i
      for (std::int64_t j = 0; j < n; ++j) out[i][j] = j == i ? 1.0f : 0.0f;
      continue;
    }
    for (const std::int64_t d : dead_) {
      out[i][d] = 0.0f;  // the receiver hears nothing from a dead node
      // The sender keeps the share it would have sent the dead node (the column still sums
      // to 1). Added in the order of the dead nodes, on every process alike.
      if (w[d][i] > 0) out[i][i] += w[d][i];
    }
  }
  surviving_source_ = mixing;
  surviving_dead_count_ = dead_.size();
  return surviving_;
}

void LinkFaults::correct(at::Tensor& z, const at::Tensor& mixed, at::Tensor& ps,
                         const at::Tensor& all_ps, double eta) {
  const std::int64_t n = hosted_.total;
  if (!rows_.empty()) {
    const auto count = static_cast<std::int64_t>(rows_.size());
    at::Tensor indices = at::empty({2, count}, at::kLong);
    auto idx = indices.accessor<std::int64_t, 2>();
    for (std::int64_t e = 0; e < count; ++e) {
      idx[0][e] = rows_[static_cast<std::size_t>(e)] - hosted_.first;
      idx[1][e] = cols_[static_cast<std::size_t>(e)];
    }
    const auto sparse = [&](const std::vector<float>& values) {
      at::Tensor v = at::from_blob(const_cast<float*>(values.data()), {count}, at::kFloat).clone();
      return at::sparse_coo_tensor(indices, v, {hosted_.count, n}).coalesce().to(z.device());
    };
    z.addmm_(sparse(numerator_delta_), mixed, 1.0, eta);
    at::Tensor column = ps.unsqueeze(1);
    column.addmm_(sparse(push_sum_delta_), all_ps.unsqueeze(1), 1.0, eta);
  }
  for (const Term& t : terms_) {
    const std::int64_t row = t.receiver - hosted_.first;
    if (t.numerator) z[row].add_(t.values.to(z.device()), eta * t.coefficient);
    if (t.push_sum) ps[row].add_(eta * t.coefficient * t.push_sum_value);
  }
}

std::map<std::string, at::Tensor> LinkFaults::held_state() const {
  const auto count = static_cast<std::int64_t>(held_.size());
  at::Tensor meta = at::empty({count, 4}, at::kLong);
  at::Tensor weights = at::empty({count, 2}, at::kFloat);
  std::vector<at::Tensor> values;
  for (std::int64_t h = 0; h < count; ++h) {
    const Held& item = held_[static_cast<std::size_t>(h)];
    meta[h][0] = item.receiver;
    meta[h][1] = item.sender;
    meta[h][2] = item.sent_round;
    meta[h][3] = item.due_round;
    weights[h][0] = item.weight;
    weights[h][1] = item.push_sum_weight;
    values.push_back(item.values.cpu());
  }
  at::Tensor known = at::empty({static_cast<std::int64_t>(last_weight_.size()), 4}, at::kDouble);
  std::int64_t e = 0;
  for (const auto& [edge, entry] : last_weight_) {
    known[e][0] = static_cast<double>(edge.first);
    known[e][1] = static_cast<double>(edge.second);
    known[e][2] = static_cast<double>(entry.first);
    known[e][3] = static_cast<double>(entry.second);
    ++e;
  }
  return {{"fault_known_weights", known},
          {"fault_held_meta", meta},
          {"fault_held_weights", weights},
          {"fault_held_values", values.empty() ? at::empty({0, 0}, at::kFloat) : at::stack(values)}};
}

void LinkFaults::restore_held(const std::map<std::string, at::Tensor>& all,
                              std::int64_t parameter_count) {
  held_.clear();
  last_weight_.clear();
  const auto get = [&](const char* name, at::ScalarType type) {
    const auto it = all.find(name);
    if (it == all.end()) throw UserError(std::string("checkpoint has no tensor '") + name + "'");
    if (it->second.scalar_type() != type) {
      throw UserError(std::string("checkpoint's ") + name + " is " +
                      c10::toString(it->second.scalar_type()) + ", expected " +
                      c10::toString(type));
    }
    return it->second.cpu().contiguous();
  };
  const at::Tensor meta = get("fault_held_meta", at::kLong);
  const at::Tensor weights = get("fault_held_weights", at::kFloat);
  const at::Tensor values = get("fault_held_values", at::kFloat);
  const std::int64_t count = meta.dim() == 2 ? meta.size(0) : -1;
  if (count < 0 || meta.size(1) != 4 || weights.sizes() != at::IntArrayRef{count, 2} ||
      (count > 0 && (values.dim() != 2 || values.size(0) != count))) {
    throw UserError("checkpoint's held messages (fault_held_*) have inconsistent shapes");
  }
  if (count > 0 && values.size(1) != parameter_count) {
    throw UserError("checkpoint's fault_held_values hold messages of " +
                    std::to_string(values.size(1)) + " values; this model's have " +
                    std::to_string(parameter_count));
  }
  const std::int64_t n = hosted_.total;
  const auto node_ok = [n](std::int64_t node) { return node >= 0 && node < n; };
  const auto m = meta.accessor<std::int64_t, 2>();
  const auto wt = weights.accessor<float, 2>();
  for (std::int64_t h = 0; h < count; ++h) {
    // A message is held by a receiver from another node, for at least one round, with the
    // finite weights of an edge (0 < W_ij <= 1) and a push-sum weight.
    const bool nodes = node_ok(m[h][0]) && node_ok(m[h][1]) && m[h][0] != m[h][1];
    const bool rounds = m[h][2] >= 0 && m[h][3] > m[h][2];
    const bool weight = std::isfinite(wt[h][0]) && wt[h][0] > 0 && wt[h][0] <= 1 &&
                        std::isfinite(wt[h][1]);
    if (!nodes || !rounds || !weight) {
      throw UserError("checkpoint's held message " + std::to_string(h) + " (receiver " +
                      std::to_string(m[h][0]) + ", sender " + std::to_string(m[h][1]) +
                      ", rounds " + std::to_string(m[h][2]) + " -> " + std::to_string(m[h][3]) +
                      ", weights " + std::to_string(wt[h][0]) + ", " +
                      std::to_string(wt[h][1]) + ") is not one a run of " + std::to_string(n) +
                      " nodes could hold");
    }
    if (!hosted_.contains(m[h][0])) continue;
    if (!at::isfinite(values[h]).all().item<bool>()) {
      throw UserError("checkpoint's held message " + std::to_string(h) +
                      " has values that are not finite");
    }
    held_.push_back(Held{m[h][0], m[h][1], m[h][2], m[h][3], wt[h][0], wt[h][1],
                         values[h].clone()});
  }
  const at::Tensor known = get("fault_known_weights", at::kDouble);
  if (known.dim() != 2 || known.size(1) != 4) {
    throw UserError("checkpoint's fault_known_weights must be [E, 4] float64");
  }
  const auto k = known.accessor<double, 2>();
  for (std::int64_t e = 0; e < known.size(0); ++e) {
    const auto whole = [](double v) { return std::isfinite(v) && v == std::floor(v); };
    const bool ok = whole(k[e][0]) && whole(k[e][1]) && whole(k[e][2]) &&
                    node_ok(static_cast<std::int64_t>(k[e][0])) &&
                    node_ok(static_cast<std::int64_t>(k[e][1])) && k[e][0] != k[e][1] &&
                    k[e][2] >= 0 && std::isfinite(k[e][3]);
    if (!ok) {
      throw UserError("checkpoint's fault_known_weights row " + std::to_string(e) +
                      " is not a (receiver, sender, round, weight) of a run of " +
                      std::to_string(n) + " nodes");
    }
    const auto receiver = static_cast<std::int64_t>(k[e][0]);
    if (!hosted_.contains(receiver)) continue;
    last_weight_[{receiver, static_cast<std::int64_t>(k[e][1])}] = {
        static_cast<std::int64_t>(k[e][2]), static_cast<float>(k[e][3])};
  }
}

}  // namespace lpdt::algo
