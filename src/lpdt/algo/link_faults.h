#pragma once
// How the nodes live with faulty links and dead peers (docs/faults.md). Each round, after the
// message exchange and before the algorithm's combine, LinkFaults looks at every edge j -> i
// into a hosted node i of this round's W:
//  - a late message (lost and resent, or delayed; FaultPlan) is held back: receiver i mixes
//    without it now and adds it in the round it arrives, with the weight W_ij of the round it was
//    sent. Push-sum weights travel in the same payload and are held back alike, so the push-sum
//    mass sum_i ps_i + (mass in flight) is conserved exactly. D-PSGD and DeepSqueeze messages are
//    mass too. Choco's q_j only updates i's copy of xh_j late: i mixes its lagging copy
//    (xh_j minus the q_j not yet arrived) with the full weight W_ij, and likewise the newest
//    push-sum weight of j it has heard (a stale view of both, consistent: once the messages
//    stop changing, the copies are exact and z and ps share their fixed point).
//  - an edge touching a dead node is dropped for good, with the rule that keeps W column-
//    stochastic among the survivors: the receiver i drops W_id (it hears nothing), the sender j
//    keeps the share W_dj it would have sent the dead node (W_jj += W_dj). The survivors' W is
//    then column-stochastic, so push-sum runs on the surviving graph: the mass that stays is
//    conserved and every x_i = z_i / ps_i keeps converging to the same weighted average. The
//    rule is local (each node changes its own row and diagonal only), so the survivors agree
//    without a round of agreement.
// The dead-peer rule is a change of W itself (surviving_mixing), which the combine and the
// push-sum mix take in place of W: a survivor's sums then hold no term of a dead node at all, so
// nothing of the dead node's rows (Choco's copies of its xh, stale or never finite) reaches the
// survivors, not even in the last bit. The late messages are a correction added after the
// combine:
//   z  += eta (Dz M + late),   ps += eta (Dps ps_all + late ps)
// with D the change of W (sparse) and M what the algorithm mixes (its messages, or Choco's xh).
#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lpdt/algo/fault_plan.h"
#include "lpdt/algo/message_exchange.h"
#include "lpdt/core/node_range.h"

namespace lpdt::algo {

// What the faults did to the hosted nodes' incoming edges so far.
struct FaultCounts {
  std::int64_t messages_lost = 0;     // losses (each one resent the next round)
  std::int64_t messages_late = 0;     // messages that arrived at least one round late
  // The three above count each late message's whole fate when it is sent: a message still in
  // flight when the run ends counts its rounds past the end too.
  std::int64_t late_rounds = 0;         // sum over late messages of how late they were
  std::int64_t messages_in_flight = 0;  // late messages not yet arrived (at a run's end: never)
  std::int64_t dead_edge_rounds = 0;    // (edge, round) pairs dropped because a node was dead
  std::map<std::int64_t, std::int64_t> dead_nodes;  // node -> round its death was seen here

  void add(const FaultCounts& other);
};

class LinkFaults {
 public:
  // plan: the injected faults. hosted: this process's nodes. choco: the algorithm mixes public
  // copies (Choco) rather than its messages. kills_from_plan: a node is dead from the plan's
  // kill_step on (the simulator); otherwise only when the exchange reports it unreachable (a
  // rank of a multi-process run detects its peers' deaths by deadline).
  LinkFaults(FaultPlan plan, const NodeRange& hosted, bool choco, bool kills_from_plan);

  // Called after the exchange of `round`, before combine. mixing: this round's W [n, n] float32
  // CPU; heard: the exchange's result (rows of dead senders are zeroed in place, so that Choco's
  // copies stop changing).
  void begin_round(std::int64_t round, const at::Tensor& mixing, ExchangedRound& heard);
  // Called after combine and the push-sum mix: the corrections of this round.
  // z: hosted numerators [count, P]; mixed: what the algorithm multiplied by L this round
  // [n, P]; ps: hosted push-sum weights [count]; all_ps: every weight before the round [n].
  void correct(at::Tensor& z, const at::Tensor& mixed, at::Tensor& ps, const at::Tensor& all_ps,
               double eta);

  // This round's W [n, n] (CPU, float32) with the dead-peer rule applied to every node dead
  // now: for a live receiver i and a dead node d, W'_id = 0 and W'_ii += W_di; a dead node's
  // row is e_d (its state stays as it is). Column-stochastic where W is. The same tensor while
  // neither W nor the dead nodes change; W itself while no node is dead.
  const at::Tensor& surviving_mixing(const at::Tensor& mixing);

  bool dead(std::int64_t node) const { return dead_.count(node) > 0; }
  const std::set<std::int64_t>& dead_nodes() const { return dead_; }
  // The counts so far, messages_in_flight those held back now.
  FaultCounts counts() const;
  // A resumed run continues the counts of its checkpoint (in flight: from restore_held).
  void restore_counts(const FaultCounts& counts);
  // A resumed run's nodes dead at its checkpoint (counts.dead_nodes) are dead from its first
  // round, on every process (the counts themselves are restored on one, restore_counts).
  void restore_dead(const FaultCounts& counts);
  const FaultPlan& plan() const { return plan_; }

  // Messages held back at the hosted receivers (checkpoints): "fault_held_meta" [H, 4] int64
  // (receiver, sender, sent round, due round), "fault_held_weights" [H, 2] float32 (W_ij of
  // the sent round, push-sum weight), "fault_held_values" [H, P] float32; and Choco's newest
  // heard weights "fault_known_weights" [E, 4] float64 (receiver, sender, sent round, weight).
  std::map<std::string, at::Tensor> held_state() const;
  // Keeps the held messages of hosted receivers among `all` (every process's, as held_state).
  // parameter_count: P, the length of a message. A file whose tensors have other types or
  // shapes, or name nodes, rounds or weights no run could have held, is a UserError naming
  // the tensor, so that a damaged checkpoint is not mixed into the survivors' models.
  void restore_held(const std::map<std::string, at::Tensor>& all, std::int64_t parameter_count);

 private:
  struct Held {
    std::int64_t receiver, sender, sent_round, due_round;
    float weight, push_sum_weight;
    at::Tensor values;  // [P]
  };
  struct Term {
    std::int64_t receiver;  // global id
    float coefficient;
    at::Tensor values;  // [P] (numerators) or undefined (push-sum only)
    float push_sum_value;
    bool numerator, push_sum;
  };

  FaultPlan plan_;
  NodeRange hosted_;
  bool choco_;
  bool kills_from_plan_;
  std::set<std::int64_t> dead_;
  std::vector<Held> held_;
  // Choco: the newest push-sum weight each hosted receiver has heard from each in-neighbour,
  // (receiver, sender) -> (sent round, weight).
  std::map<std::pair<std::int64_t, std::int64_t>, std::pair<std::int64_t, float>> last_weight_;
  void known_weight(std::int64_t receiver, std::int64_t sender, std::int64_t sent_round,
                    float weight) {
    auto& entry = last_weight_[{receiver, sender}];
    if (entry.first <= sent_round) entry = {sent_round, weight};
  }
  FaultCounts counts_;
  // surviving_mixing's last result and what it was made from.
  at::Tensor surviving_source_, surviving_;
  std::size_t surviving_dead_count_ = 0;
  // This round's corrections.
  std::vector<std::int64_t> rows_, cols_;  // D entries, rows global
  std::vector<float> numerator_delta_, push_sum_delta_;
  std::vector<Term> terms_;
};

}  // namespace lpdt::algo
