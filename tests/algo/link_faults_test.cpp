// Injected faults and dead peers (algo/fault_plan.h, algo/link_faults.h) against the equations of
// docs/faults.md: late messages conserve the push-sum mass (in flight included) and the nodes
// still agree on the exact average; a dead node's survivors keep a column-stochastic W (their
// mass is conserved) and agree; no fault changes nothing bit for bit.
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "graphs.h"
#include "lpdt/algo/decentralized_optimizer.h"
#include "lpdt/algo/fault_plan.h"
#include "lpdt/algo/link_faults.h"
#include "lpdt/core/error.h"

namespace lpdt::algo {
namespace {

using testing::small_layout;

// Exponential graph on 8 nodes: j -> j+1, j+2, j+4, uniform weights 1/4 (column-stochastic,
// strongly connected after any one node dies).
torch::Tensor exponential8() {
  const std::int64_t n = 8;
  auto w = torch::zeros({n, n});
  for (std::int64_t j = 0; j < n; ++j) {
    w[j][j] = 0.25;
    for (const std::int64_t hop : {1, 2, 4}) w[(j + hop) % n][j] = 0.25;
  }
  return w;
}

DecentralizedOptions gossip_only(const char* algorithm, double eta) {
  DecentralizedOptions o;
  o.algorithm(algorithm).eta(eta).momentum(0).weight_decay(0);
  return o;
}

std::unique_ptr<LinkFaults> faults_for(const FaultOptions& f, std::int64_t n, bool choco) {
  return std::make_unique<LinkFaults>(FaultPlan(f), NodeRange::all(n), choco,
                                      /*kills_from_plan=*/true);
}

// sum over held messages of W_ij * (push-sum weight) and of W_ij * values: the mass in flight.
std::pair<double, torch::Tensor> mass_in_flight(const LinkFaults& faults, std::int64_t p) {
  const auto held = faults.held_state();
  const auto& weights = held.at("fault_held_weights");
  if (weights.size(0) == 0) return {0.0, torch::zeros({p}, torch::kDouble)};
  const auto w = weights.select(1, 0).to(torch::kDouble);
  const double ps = (w * weights.select(1, 1).to(torch::kDouble)).sum().item<double>();
  const auto values = (held.at("fault_held_values").to(torch::kDouble) * w.unsqueeze(1)).sum(0);
  return {ps, values};
}

TEST(FaultPlan, IsDeterministicAndDrawsAtTheConfiguredRates) {
  FaultOptions f;
  f.seed = 7;
  f.drop_probability = 0.2;
  f.delay_probability = 0.1;
  f.delay_rounds = 3;
  const FaultPlan plan(f), again(f);
  std::int64_t lost_once = 0, delayed = 0, total = 0, resent_twice = 0;
  for (std::int64_t round = 0; round < 400; ++round) {
    for (std::int64_t j = 0; j < 10; ++j) {
      const MessageFate fate = plan.fate(round, j, (j + 1) % 10);
      const MessageFate same = again.fate(round, j, (j + 1) % 10);
      ASSERT_EQ(fate.late_rounds, same.late_rounds);
      ASSERT_EQ(fate.losses, same.losses);
      ASSERT_GE(fate.late_rounds, fate.losses);
      lost_once += fate.losses >= 1;
      resent_twice += fate.losses >= 2;
      delayed += fate.late_rounds - fate.losses == 3;
      ++total;
    }
  }
  // 4000 draws: 3 standard deviations of a binomial proportion are < 0.02.
  EXPECT_NEAR(static_cast<double>(lost_once) / total, 0.2, 0.02);
  EXPECT_NEAR(static_cast<double>(resent_twice) / total, 0.04, 0.012);  // lost again: p^2
  EXPECT_NEAR(static_cast<double>(delayed) / total, 0.1, 0.015);
  // Another seed, other fates.
  f.seed = 8;
  const FaultPlan other(f);
  std::int64_t differ = 0;
  for (std::int64_t round = 0; round < 100; ++round) {
    differ += other.fate(round, 0, 1).late_rounds != plan.fate(round, 0, 1).late_rounds;
  }
  EXPECT_GT(differ, 10);
}

// Near p = 1 the losses in a row stop at the documented bound, for the fraction p^64 of
// messages that capped_loss_fraction gives (what the run's warning reports).
TEST(FaultPlan, LossesInARowStopAtTheBoundForTheFractionItGives) {
  FaultOptions f;
  f.seed = 3;
  f.drop_probability = 0.99;
  const FaultPlan plan(f);
  std::int64_t capped = 0, total = 0;
  for (std::int64_t round = 0; round < 400; ++round) {
    for (std::int64_t j = 0; j < 10; ++j) {
      const MessageFate fate = plan.fate(round, j, (j + 1) % 10);
      ASSERT_LE(fate.losses, kMaxConsecutiveLosses);
      capped += fate.losses == kMaxConsecutiveLosses;
      ++total;
    }
  }
  EXPECT_NEAR(capped_loss_fraction(0.99), std::pow(0.99, 64), 1e-12);
  EXPECT_NEAR(capped_loss_fraction(0.99), 0.5256, 1e-4);
  EXPECT_LT(capped_loss_fraction(0.9), 1.2e-3);
  // 4000 draws: 3 standard deviations of the proportion are < 0.024.
  EXPECT_NEAR(static_cast<double>(capped) / total, capped_loss_fraction(0.99), 0.024);
}

TEST(FaultPlan, RejectsBadOptions) {
  FaultOptions f;
  f.drop_probability = 1.0;
  EXPECT_THROW(FaultPlan{f}, ConfigError);
  f.drop_probability = 0;
  f.delay_rounds = 0;
  EXPECT_THROW(FaultPlan{f}, ConfigError);
  f.delay_rounds = 1;
  f.kill_nodes = {-1};
  EXPECT_THROW(FaultPlan{f}, ConfigError);
  f.kill_nodes = {2, 0};
  f.kill_step = 5;
  const FaultPlan plan(f);
  EXPECT_FALSE(plan.killed(0, 4));
  EXPECT_TRUE(plan.killed(0, 5));
  EXPECT_TRUE(plan.killed(2, 9));
  EXPECT_FALSE(plan.killed(1, 9));
}

// With a plan that injects nothing, a run with LinkFaults is bit-identical to one without.
TEST(LinkFaults, NoFaultChangesNothing) {
  for (const char* algorithm : {"choco", "deepsqueeze"}) {
    const auto layout = small_layout();
    const auto w = exponential8();
    const std::int64_t n = w.size(0);
    DecentralizedOptions o;
    o.algorithm(algorithm).eta(0.5);
    o.compressor(compress::CompressorOptions().name("topk").keep_fraction(0.3));
    DecentralizedOptimizer plain(o, n, layout), with_faults(o, n, layout);
    with_faults.set_faults(faults_for(FaultOptions{}, n, std::string(algorithm) == "choco"));
    torch::manual_seed(3);
    auto x = torch::randn({n, layout.total_numel});
    auto y = x.clone();
    auto ledger_a = plain.make_ledger(), ledger_b = with_faults.make_ledger();
    for (std::int64_t round = 0; round < 12; ++round) {
      const auto grad = torch::randn_like(x);
      plain.step(x, grad, w, 0.1, round, ledger_a);
      with_faults.step(y, grad, w, 0.1, round, ledger_b);
    }
    EXPECT_TRUE(torch::equal(x, y)) << algorithm;
    EXPECT_TRUE(torch::equal(plain.push_sum_weights(), with_faults.push_sum_weights()));
  }
}

// Late messages (lost and resent, or delayed) are push-sum mass in flight: sum_i ps_i plus the
// weight in flight stays n, the numerators' sum plus theirs in flight stays sum_i z_i(0), and the
// nodes still reach the exact average of their initial values.
TEST(LinkFaults, LateMessagesConservePushSumMassAndKeepTheAverage) {
  for (const char* algorithm : {"dpsgd", "deepsqueeze"}) {
    const auto layout = small_layout();
    const auto w = exponential8();
    const std::int64_t n = w.size(0), p = layout.total_numel;
    DecentralizedOptimizer opt(gossip_only(algorithm, 1.0), n, layout);
    FaultOptions f;
    f.seed = 11;
    f.drop_probability = 0.3;
    f.delay_probability = 0.3;
    f.delay_rounds = 2;
    opt.set_faults(faults_for(f, n, false));
    torch::manual_seed(5);
    auto x = torch::randn({n, p});
    const auto average = x.to(torch::kDouble).mean(0);
    const auto total = x.to(torch::kDouble).sum(0);  // z = x at ps = 1
    auto ledger = opt.make_ledger();
    for (std::int64_t round = 0; round < 400; ++round) {
      opt.gossip_round(x, w, round, ledger);
      if (round % 50 != 7) continue;
      const auto ps = opt.push_sum_weights().to(torch::kDouble);
      const auto [ps_flight, z_flight] = mass_in_flight(*opt.faults(), p);
      EXPECT_NEAR(ps.sum().item<double>() + ps_flight, static_cast<double>(n), 1e-4)
          << algorithm << " round " << round;
      const auto z = x.to(torch::kDouble) * ps.unsqueeze(1);
      EXPECT_LT((z.sum(0) + z_flight - total).abs().max().item<double>(), 1e-3)
          << algorithm << " round " << round;
    }
    EXPECT_GT(opt.faults()->counts().messages_lost, 100);
    EXPECT_GT(opt.faults()->counts().messages_late, opt.faults()->counts().messages_lost / 2);
    // DeepSqueeze without compression mixes its exact messages too.
    EXPECT_LT((x.to(torch::kDouble) - average.unsqueeze(0)).abs().max().item<double>(), 1e-3)
        << algorithm;
  }
}

// A dead node: its survivors' W stays column-stochastic (each sender keeps the share it would
// have sent the dead node), so their push-sum mass is conserved from the death on, and they
// agree on a common value.
TEST(LinkFaults, SurvivorsOfADeadNodeConserveTheirMassAndAgree) {
  for (const char* algorithm : {"dpsgd", "choco"}) {
    const auto layout = small_layout();
    const auto w = exponential8();
    const std::int64_t n = w.size(0), p = layout.total_numel;
    const bool choco = std::string(algorithm) == "choco";
    DecentralizedOptimizer opt(gossip_only(algorithm, choco ? 0.5 : 1.0), n, layout);
    FaultOptions f;
    f.kill_nodes = {3};
    f.kill_step = 5;
    opt.set_faults(faults_for(f, n, choco));
    torch::manual_seed(9);
    auto x = torch::randn({n, p});
    auto ledger = opt.make_ledger();
    const auto alive = torch::tensor({0, 1, 2, 4, 5, 6, 7}, torch::kLong);
    double mass_at_death = 0;
    torch::Tensor z_at_death;
    for (std::int64_t round = 0; round < 300; ++round) {
      opt.gossip_round(x, w, round, ledger);
      const auto ps = opt.push_sum_weights().to(torch::kDouble).index_select(0, alive);
      const auto z = (x.to(torch::kDouble).index_select(0, alive) * ps.unsqueeze(1)).sum(0);
      if (round == 5) {
        mass_at_death = ps.sum().item<double>();
        z_at_death = z;
      } else if (round > 5 && !choco) {
        ASSERT_NEAR(ps.sum().item<double>(), mass_at_death, 1e-4) << algorithm << " " << round;
        ASSERT_LT((z - z_at_death).abs().max().item<double>(), 1e-3) << algorithm << " " << round;
      } else if (round > 5) {
        // Choco mixes public copies: the weights are exact messages, the numerators are not.
        ASSERT_NEAR(ps.sum().item<double>(), mass_at_death, 1e-4) << algorithm << " " << round;
      }
    }
    const auto survivors = x.index_select(0, alive);
    EXPECT_LT((survivors - survivors.mean(0, true)).abs().max().item<double>(), 1e-3) << algorithm;
    EXPECT_EQ(opt.faults()->dead_nodes(), std::set<std::int64_t>{3});
    EXPECT_EQ(opt.faults()->counts().dead_nodes.at(3), 5);
    // Node 3 hears from 2, 1, 7 and sends to 4, 5, 7: its 3 in-edges of survivors are counted.
    EXPECT_EQ(opt.faults()->counts().dead_edge_rounds, 3 * (300 - 5));
    // Bytes go over live edges only: node 3 sends and hears nothing from round 5 on, and its
    // in-neighbours send on 2 of their 3 out-edges. Node 0's edges all live: 300 x 3 messages.
    const auto& sent = ledger.bytes_sent_per_node();
    const auto& received = ledger.bytes_received_per_node();
    ASSERT_EQ(sent[0] % 900, 0) << algorithm;
    const std::int64_t message = sent[0] / 900;
    EXPECT_EQ(sent[3], 5 * 3 * message) << algorithm;
    EXPECT_EQ(received[3], 5 * 3 * message) << algorithm;
    for (const int in_neighbour : {1, 2, 7}) {
      EXPECT_EQ(sent[in_neighbour], (5 * 3 + 295 * 2) * message) << algorithm << in_neighbour;
    }
    for (const int out_neighbour : {4, 5, 7}) {  // hear from 3 for 5 rounds only
      EXPECT_EQ(received[out_neighbour], (5 * 3 + 295 * 2) * message) << algorithm << out_neighbour;
    }
    EXPECT_EQ(received[6], 300 * 3 * message) << algorithm;  // hears from 5, 4, 2
  }
}

// The dead-peer rule as a matrix (docs/faults.md): a live receiver's entry of a dead node is 0
// and its diagonal takes the share it sent the dead node; a dead node's row is e_d; every column
// still sums to 1; nothing changes while no node is dead.
TEST(LinkFaults, SurvivingMixingDropsTheDeadNodesEdges) {
  const auto w = exponential8();
  const std::int64_t n = w.size(0);
  FaultOptions f;
  f.kill_nodes = {3, 6};
  f.kill_step = 2;
  LinkFaults faults(FaultPlan(f), NodeRange::all(n), /*choco=*/false, /*kills_from_plan=*/true);
  EXPECT_TRUE(faults.surviving_mixing(w).is_same(w)) << "no node dead yet";
  ExchangedRound heard;
  heard.messages = torch::zeros({n, 4});
  heard.push_sum_weights = torch::ones({n});
  faults.begin_round(2, w, heard);
  const auto got = faults.surviving_mixing(w);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      float expected = w[i][j].item<float>();
      if (i == 3 || i == 6) {
        expected = i == j ? 1.0f : 0.0f;
      } else if (j == 3 || j == 6) {
        expected = 0.0f;
      } else if (i == j) {
        expected += w[3][i].item<float>() + w[6][i].item<float>();
      }
      EXPECT_EQ(got[i][j].item<float>(), expected) << "W'[" << i << "][" << j << "]";
    }
  }
  EXPECT_TRUE(torch::allclose(got.sum(0), torch::ones({n}))) << "columns sum to 1";
  EXPECT_TRUE(faults.surviving_mixing(w).is_same(got)) << "kept while nothing changes";
}

// The survivors' arithmetic holds no term of a dead node: with the dead node's rows (its model,
// push-sum weight, Choco's copies of its xh) made garbage after its death, the survivors' models
// and weights are the same bit for bit. (Before, Choco mixed the dead node's copy with the old W
// and took it back in a correction: exact only to rounding, and NaN through a NaN copy.)
TEST(LinkFaults, ADeadNodesRowsDoNotReachTheSurvivors) {
  for (const char* algorithm : {"choco", "deepsqueeze", "dpsgd"}) {
    const auto layout = small_layout();
    const auto w = exponential8();
    const std::int64_t n = w.size(0), p = layout.total_numel;
    DecentralizedOptions o;
    o.algorithm(algorithm).eta(0.5).momentum(0.9).weight_decay(1e-4);
    if (std::string(algorithm) != "dpsgd") {
      o.compressor(compress::CompressorOptions().name("topk").keep_fraction(0.3));
    }
    FaultOptions f;
    f.kill_nodes = {3};
    f.kill_step = 4;
    const bool choco = std::string(algorithm) == "choco";
    DecentralizedOptimizer a(o, n, layout), b(o, n, layout);
    a.set_faults(faults_for(f, n, choco));
    b.set_faults(faults_for(f, n, choco));
    torch::manual_seed(21);
    auto xa = torch::randn({n, p});
    auto xb = xa.clone();
    auto ledger_a = a.make_ledger(), ledger_b = b.make_ledger();
    const auto alive = torch::tensor({0, 1, 2, 4, 5, 6, 7}, torch::kLong);
    for (std::int64_t round = 0; round < 30; ++round) {
      if (round == 8) {  // node 3 has been dead for 4 rounds: garbage in all of its rows of b
        xb[3].fill_(std::numeric_limits<float>::quiet_NaN());
        for (auto& [name, tensor] : b.state()) {
          if (tensor.dim() >= 1 && tensor.size(0) == n) tensor[3].fill_(name == "ps" ? 0.0 : 1e30);
        }
      }
      const auto grad = torch::randn_like(xa);
      a.step(xa, grad, w, 0.1, round, ledger_a);
      b.step(xb, grad, w, 0.1, round, ledger_b);
    }
    EXPECT_TRUE(torch::equal(xa.index_select(0, alive), xb.index_select(0, alive))) << algorithm;
    EXPECT_TRUE(torch::equal(a.push_sum_weights().index_select(0, alive),
                             b.push_sum_weights().index_select(0, alive)))
        << algorithm;
    EXPECT_TRUE(torch::isfinite(xb.index_select(0, alive)).all().item<bool>()) << algorithm;
  }
}

// Choco's receivers mix lagging copies while q_j is in flight; once it lands the copies are
// exact again, and the nodes agree.
TEST(LinkFaults, ChocoWithLateMessagesStillAgrees) {
  const auto layout = small_layout();
  const auto w = exponential8();
  const std::int64_t n = w.size(0);
  DecentralizedOptions o = gossip_only("choco", 0.5);
  o.compressor(compress::CompressorOptions().name("topk").keep_fraction(0.5));
  DecentralizedOptimizer opt(o, n, layout);
  FaultOptions f;
  f.seed = 3;
  f.drop_probability = 0.2;
  f.delay_probability = 0.2;
  f.delay_rounds = 3;
  opt.set_faults(faults_for(f, n, true));
  torch::manual_seed(1);
  auto x = torch::randn({n, layout.total_numel});
  const auto spread_before = (x - x.mean(0, true)).abs().max().item<double>();
  auto ledger = opt.make_ledger();
  for (std::int64_t round = 0; round < 400; ++round) opt.gossip_round(x, w, round, ledger);
  EXPECT_TRUE(torch::isfinite(x).all().item<bool>());
  EXPECT_LT((x - x.mean(0, true)).abs().max().item<double>(), 1e-3 * spread_before);
}

// Half the messages of 8 nodes on the exponential graph delayed 4 rounds, after 3 rounds of
// D-PSGD: the faults (f) and the messages still held then (LinkFaults::held_state).
struct HeldAfterThreeRounds {
  FaultOptions f;
  std::map<std::string, at::Tensor> held;
};
HeldAfterThreeRounds held_after_three_rounds(const LayerLayout& layout, std::int64_t n) {
  const auto w = exponential8();
  DecentralizedOptimizer opt(gossip_only("dpsgd", 1.0), n, layout);
  HeldAfterThreeRounds out;
  out.f.seed = 2;
  out.f.delay_probability = 0.5;
  out.f.delay_rounds = 4;
  opt.set_faults(faults_for(out.f, n, false));
  auto x = torch::randn({n, layout.total_numel});
  auto ledger = opt.make_ledger();
  for (std::int64_t round = 0; round < 3; ++round) opt.gossip_round(x, w, round, ledger);
  out.held = opt.faults()->held_state();
  return out;
}

TEST(LinkFaults, HeldMessagesRoundTripAndSplitByReceiver) {
  const auto layout = small_layout();
  const std::int64_t n = exponential8().size(0);
  const auto [f, held] = held_after_three_rounds(layout, n);
  const std::int64_t count = held.at("fault_held_meta").size(0);
  ASSERT_GT(count, 0);
  // A process hosting nodes 4..7 keeps the messages those nodes are waiting for, in order.
  LinkFaults block(FaultPlan(f), NodeRange{4, 4, n}, false, true);
  block.restore_held(held, layout.total_numel);
  const auto kept = block.held_state();
  const auto receivers = held.at("fault_held_meta").select(1, 0);
  const auto mine = torch::nonzero(receivers >= 4).squeeze(1);
  EXPECT_TRUE(torch::equal(kept.at("fault_held_meta"), held.at("fault_held_meta").index_select(0, mine)));
  EXPECT_TRUE(torch::equal(kept.at("fault_held_values"),
                           held.at("fault_held_values").index_select(0, mine)));
  auto broken = held;
  broken["fault_held_weights"] = torch::zeros({count + 1, 2});
  EXPECT_THROW(block.restore_held(broken, layout.total_numel), UserError);
}

// A resealed or damaged checkpoint's held messages must not be mixed into the models: each
// field a run could not have written is named.
TEST(LinkFaults, HeldMessagesANodeCouldNotHoldAreRefused) {
  const auto layout = small_layout();
  const std::int64_t n = exponential8().size(0);
  const auto [f, held] = held_after_three_rounds(layout, n);
  ASSERT_GT(held.at("fault_held_meta").size(0), 0);
  LinkFaults fresh(FaultPlan(f), NodeRange{0, n, n}, false, true);
  EXPECT_NO_THROW(fresh.restore_held(held, layout.total_numel));

  const auto refused = [&](const std::string& name, const at::Tensor& value,
                           const std::string& expected_text, std::int64_t p) {
    auto broken = held;
    broken[name] = value;
    try {
      fresh.restore_held(broken, p);
      ADD_FAILURE() << name << ": accepted";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(expected_text), std::string::npos) << e.what();
    }
  };
  const auto with_meta = [&](std::int64_t column, std::int64_t value) {
    auto meta = held.at("fault_held_meta").clone();
    meta[0][column] = value;
    return meta;
  };
  refused("fault_held_meta", with_meta(0, n), "not one a run of 8 nodes", layout.total_numel);
  refused("fault_held_meta", with_meta(1, -1), "not one a run", layout.total_numel);
  refused("fault_held_meta", with_meta(1, held.at("fault_held_meta")[0][0].item<std::int64_t>()),
          "not one a run", layout.total_numel);
  refused("fault_held_meta", with_meta(3, held.at("fault_held_meta")[0][2].item<std::int64_t>()),
          "not one a run", layout.total_numel);
  refused("fault_held_meta", held.at("fault_held_meta").to(torch::kInt), "expected Long",
          layout.total_numel);
  auto weights = held.at("fault_held_weights").clone();
  weights[0][0] = std::numeric_limits<float>::infinity();
  refused("fault_held_weights", weights, "not one a run", layout.total_numel);
  auto values = held.at("fault_held_values").clone();
  values[0][0] = std::numeric_limits<float>::quiet_NaN();
  refused("fault_held_values", values, "not finite", layout.total_numel);
  refused("fault_held_values", held.at("fault_held_values"), "this model's have",
          layout.total_numel + 1);
  refused("fault_known_weights", torch::tensor({{0.0, 9.0, 1.0, 0.5}}, torch::kDouble),
          "fault_known_weights row 0", layout.total_numel);
}

}  // namespace
}  // namespace lpdt::algo
