// Byte ledger: both accounting modes, and the paper's Table 3 "Data (GB)" numbers reproduced from
// the reference spec's P and V (section 3.4).
#include "lpdt/metrics/byte_ledger.h"

#include <gtest/gtest.h>
#include <torch/types.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "lpdt/core/error.h"

namespace lpdt::metrics {
namespace {

// Directed ring r -> r + 1 with uniform weights 1/2 (the official RingGraph + UniformMixing).
torch::Tensor directed_ring(std::int64_t n) {
  auto w = torch::zeros({n, n});
  for (std::int64_t j = 0; j < n; ++j) {
    w[j][j] = 0.5;
    w[(j + 1) % n][j] = 0.5;
  }
  return w;
}

// Directed, irregular, column-stochastic: node j sends 1/(out_j + 1) to itself and each out-peer.
torch::Tensor irregular_graph() {
  const std::vector<std::vector<std::int64_t>> out = {{1, 2, 3}, {2, 3}, {3, 0}, {4}, {0}};
  auto w = torch::zeros({5, 5});
  for (std::int64_t j = 0; j < 5; ++j) {
    const float share = 1.0f / static_cast<float>(out[j].size() + 1);
    w[j][j] = share;
    for (auto i : out[j]) w[i][j] = share;
  }
  return w;
}

double round_to(double x, int decimals) {
  const double s = std::pow(10.0, decimals);
  return std::round(x * s) / s;
}

TEST(PayloadBytes, ReferenceFormula) {
  // Reference (spec 3.4): dense 4 (P + 1), sparse 6 V + 3. (lpdt's own sizes are the encoded
  // wire payloads: tests/comm/message_codec_test.cpp.)
  EXPECT_EQ(reference_payload_bytes(273258, false), 1093036);
  EXPECT_EQ(reference_payload_bytes(2767, true), 16605);
  EXPECT_EQ(reference_payload_bytes(760458, false), 3041836);
  EXPECT_EQ(reference_payload_bytes(7687, true), 46125);
}

TEST(PayloadBytes, ParseModes) {
  EXPECT_EQ(parse_byte_accounting("lpdt"), ByteAccounting::kLpdt);
  EXPECT_EQ(parse_byte_accounting("reference"), ByteAccounting::kReference);
  EXPECT_EQ(to_string(ByteAccounting::kReference), "reference");
  EXPECT_THROW(parse_byte_accounting("paper"), ConfigError);
}

TEST(Degrees, DirectedIrregular) {
  const auto w = irregular_graph();
  EXPECT_TRUE(torch::equal(out_degrees(w), torch::tensor({3, 2, 2, 1, 1}, torch::kLong)));
  // in-neighbours: 0 <- {2, 4}; 1 <- {0}; 2 <- {0, 1}; 3 <- {0, 1, 2}; 4 <- {3}
  EXPECT_TRUE(torch::equal(in_degrees(w), torch::tensor({2, 1, 2, 3, 1}, torch::kLong)));
  const auto b = bytes_over_edges(w, torch::tensor({10, 20, 30, 40, 50}, torch::kLong));
  EXPECT_TRUE(torch::equal(b.sent, torch::tensor({30, 40, 60, 40, 50}, torch::kLong)));
  EXPECT_TRUE(torch::equal(b.received, torch::tensor({80, 10, 30, 60, 40}, torch::kLong)));
  EXPECT_EQ(b.sent.sum().item<std::int64_t>(), b.received.sum().item<std::int64_t>());
}

TEST(ByteLedger, LpdtCountsEveryRoundReferenceLagsOne) {
  const auto w = irregular_graph();
  const auto payload = torch::full({5}, 100, torch::kLong);
  ByteLedger lpdt(5, ByteAccounting::kLpdt);
  ByteLedger ref(5, ByteAccounting::kReference);
  lpdt.record_round_from_payload(0, w, payload);
  ref.record_round_from_payload(0, w, payload);
  EXPECT_EQ(lpdt.total_bytes_sent(), 900);  // 9 edges x 100
  EXPECT_EQ(ref.total_bytes_sent(), 0);     // transfer_params returns 0 on its first call
  EXPECT_EQ(ref.rounds_counted(), 0);
  EXPECT_EQ(ref.bytes_sent_in_round(0), 900);  // what went out
  lpdt.record_round_from_payload(1, w, payload * 2);
  ref.record_round_from_payload(1, w, payload * 2);
  EXPECT_EQ(lpdt.total_bytes_sent(), 2700);
  EXPECT_EQ(ref.total_bytes_sent(), 900);
  EXPECT_EQ(ref.rounds_counted(), 1);
  EXPECT_EQ(lpdt.bytes_sent_per_node(), (std::vector<std::int64_t>{900, 600, 600, 300, 300}));
  EXPECT_EQ(lpdt.bytes_received_per_node(), (std::vector<std::int64_t>{600, 300, 600, 900, 300}));
  EXPECT_EQ(ref.bytes_sent_per_node(), (std::vector<std::int64_t>{300, 200, 200, 100, 100}));
  EXPECT_EQ(lpdt.bytes_sent_in_round(1), 1800);
  EXPECT_THROW(lpdt.bytes_sent_in_round(5), UserError);
  EXPECT_THROW(lpdt.record_round_from_payload(1, w, payload), UserError);  // not increasing
  EXPECT_THROW(ByteLedger(0, ByteAccounting::kLpdt), UserError);
  EXPECT_THROW(ByteLedger(-1, ByteAccounting::kLpdt), UserError);
  // Byte counts are whole and not negative: a float's 2.9 was read as 2, -10 subtracted.
  EXPECT_THROW(lpdt.record_round(7, torch::full({5}, 2.9), torch::zeros({5}, torch::kLong)),
               UserError);
  EXPECT_THROW(lpdt.record_round(7, torch::full({5}, -10, torch::kLong),
                                 torch::zeros({5}, torch::kLong)),
               UserError);
  EXPECT_DOUBLE_EQ(lpdt.mean_gb_sent_per_node(), 2700.0 / 5 / 1e9);
}

// The reference protocol's end: the official gossip-averaging loop counts every round it
// applies (reference spec 3.4, 5.4), so the pending round is counted, once.
TEST(ByteLedger, CountPendingCountsTheLaggingRoundOnce) {
  const auto w = irregular_graph();
  const auto payload = torch::full({5}, 100, torch::kLong);
  ByteLedger ref(5, ByteAccounting::kReference);
  ByteLedger lpdt(5, ByteAccounting::kLpdt);
  for (int r = 0; r < 3; ++r) {
    ref.record_round_from_payload(r, w, payload);
    lpdt.record_round_from_payload(r, w, payload);
  }
  EXPECT_EQ(ref.rounds_counted(), 2);
  ref.count_pending();
  lpdt.count_pending();
  EXPECT_EQ(ref.rounds_counted(), 3);
  EXPECT_EQ(ref.total_bytes_sent(), 3 * 900);
  EXPECT_EQ(ref.bytes_sent_per_node(), lpdt.bytes_sent_per_node());
  EXPECT_EQ(lpdt.total_bytes_sent(), 3 * 900);  // kLpdt had nothing pending
  ref.count_pending();
  EXPECT_EQ(ref.total_bytes_sent(), 3 * 900);  // not twice
  // It survives a checkpoint, and a later round lags again.
  ByteLedger copy = ByteLedger::from_json(nlohmann::json::parse(ref.to_json().dump()));
  EXPECT_EQ(copy.rounds_counted(), 3);
  copy.record_round_from_payload(3, w, payload);
  EXPECT_EQ(copy.rounds_counted(), 3);
  EXPECT_EQ(copy.total_bytes_sent(), 3 * 900);
}

TEST(ByteLedger, JsonRoundTripContinuesIdentically) {
  const auto w = directed_ring(4);
  const auto payload = torch::tensor({7, 8, 9, 10}, torch::kLong);
  ByteLedger a(4, ByteAccounting::kReference);
  for (int r = 0; r < 3; ++r) a.record_round_from_payload(r, w, payload);
  ByteLedger b = ByteLedger::from_json(nlohmann::json::parse(a.to_json().dump()));
  for (int r = 3; r < 6; ++r) {
    a.record_round_from_payload(r, w, payload);
    b.record_round_from_payload(r, w, payload);
  }
  EXPECT_EQ(a.to_json(), b.to_json());
  EXPECT_EQ(b.rounds_counted(), 5);
  EXPECT_EQ(b.total_bytes_sent(), 5 * 34);
  EXPECT_THROW(ByteLedger::from_json(nlohmann::json{{"num_nodes", 2}}), UserError);
  // Rounds out of order (bytes_sent_in_round's search needs them increasing), node counts that
  // are none: named as a damaged checkpoint, not a crash.
  nlohmann::json backwards = a.to_json();
  backwards["rounds"] = nlohmann::json::array({{5, 1}, {2, 1}});
  EXPECT_THROW(ByteLedger::from_json(backwards), UserError);
  for (const std::int64_t bad : {std::int64_t{0}, std::int64_t{-1}}) {
    nlohmann::json none = a.to_json();
    none["num_nodes"] = bad;
    EXPECT_THROW(ByteLedger::from_json(none), UserError);
  }
}

// Paper Table 3 with reference accounting: 200 epochs x 196 iterations = 39,200 rounds on a
// directed ring (out-degree 1); the official code counts 39,199 of them.
struct Table3Row {
  const char* run;
  std::int64_t nodes;
  std::int64_t values;  // P (dense) or V (sparse)
  bool sparse;
  std::int64_t bytes_per_round;
  double gb;        // spec 3.4, 4 significant decimals
  double paper_gb;  // as printed in the paper
  int paper_decimals;
};

TEST(ByteLedger, PaperTable3ReferenceAccounting) {
  constexpr std::int64_t kRounds = 200 * 196;
  const Table3Row rows[] = {
      {"ResNet-20 FP dense", 8, 273258, false, 1093036, 42.846, 42.85, 2},
      {"ResNet-20 16 nodes top-1%", 16, 2767, true, 16605, 0.6509, 0.651, 3},
      {"ResNet-54 FP dense", 8, 760458, false, 3041836, 119.24, 119.2, 1},
      {"ResNet-54 16 nodes top-1%", 16, 7687, true, 46125, 1.808, 1.808, 3},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.run);
    const std::int64_t payload = reference_payload_bytes(row.values, row.sparse);
    ASSERT_EQ(payload, row.bytes_per_round);
    const auto w = directed_ring(row.nodes);
    const auto edges = bytes_over_edges(w, torch::full({row.nodes}, payload, torch::kLong));
    ByteLedger ledger(row.nodes, ByteAccounting::kReference);
    for (std::int64_t r = 0; r < kRounds; ++r) ledger.record_round(r, edges.sent, edges.received);
    EXPECT_EQ(ledger.rounds_counted(), kRounds - 1);
    for (auto b : ledger.bytes_sent_per_node()) EXPECT_EQ(b, payload * (kRounds - 1));
    const double gb = ledger.mean_gb_sent_per_node();
    const int decimals = row.gb < 1.0 ? 4 : (row.gb < 100.0 ? 3 : 2);
    EXPECT_DOUBLE_EQ(round_to(gb, decimals), row.gb) << gb;
    EXPECT_DOUBLE_EQ(round_to(gb, row.paper_decimals), row.paper_gb) << gb;
    // lpdt accounting counts every round.
    ByteLedger ours(row.nodes, ByteAccounting::kLpdt);
    const std::int64_t ours_payload = 8 * row.values + 36;
    const auto ours_edges =
        bytes_over_edges(w, torch::full({row.nodes}, ours_payload, torch::kLong));
    for (std::int64_t r = 0; r < 3; ++r) ours.record_round(r, ours_edges.sent, ours_edges.received);
    EXPECT_EQ(ours.bytes_sent_per_node()[0], 3 * ours_payload);
  }
}

// Multi-process runs: ledgers of disjoint node blocks add up to the whole run's, in both modes,
// and a whole-run ledger split with keep_only_nodes adds back up to itself.
TEST(ByteLedger, BlocksAddUpToTheWholeRun) {
  const auto w = irregular_graph();
  const auto payload = torch::tensor({100, 70, 50, 30, 10}, torch::kLong);
  for (ByteAccounting mode : {ByteAccounting::kLpdt, ByteAccounting::kReference}) {
    ByteLedger whole(5, mode), a(5, mode), b(5, mode);
    const auto in_a = torch::tensor({1, 1, 0, 0, 0}, torch::kLong);
    for (std::int64_t round = 0; round < 3; ++round) {
      const EdgeBytes edges = bytes_over_edges(w, payload * (round + 1));
      whole.record_round(round, edges.sent, edges.received);
      a.record_round(round, edges.sent * in_a, edges.received * in_a);
      b.record_round(round, edges.sent * (1 - in_a), edges.received * (1 - in_a));
    }
    ByteLedger sum = a;
    sum.add(b);
    EXPECT_EQ(sum.bytes_sent_per_node(), whole.bytes_sent_per_node());
    EXPECT_EQ(sum.bytes_received_per_node(), whole.bytes_received_per_node());
    EXPECT_EQ(sum.rounds(), whole.rounds());
    EXPECT_EQ(sum.to_json(), whole.to_json());

    ByteLedger first = whole, second = whole;
    first.keep_only_nodes(0, 2, /*keep_round_totals=*/true);
    second.keep_only_nodes(2, 3, /*keep_round_totals=*/false);
    EXPECT_EQ(first.bytes_sent_per_node()[2], 0);
    first.add(second);
    EXPECT_EQ(first.to_json(), whole.to_json());
  }
  ByteLedger other(4, ByteAccounting::kLpdt);
  ByteLedger five(5, ByteAccounting::kLpdt);
  EXPECT_THROW(five.add(other), UserError);
}

// A dead rank's last report (fewer rounds) adds its nodes' totals, not its rounds; add() refuses
// it, and a ledger of other nodes or another accounting is refused by both.
TEST(ByteLedger, AnEarlierLedgerAddsItsNodeTotalsOnly) {
  const auto w = irregular_graph();
  const auto payload = torch::tensor({100, 70, 50, 30, 10}, torch::kLong);
  const auto in_a = torch::tensor({1, 1, 0, 0, 0}, torch::kLong);
  ByteLedger a(5, ByteAccounting::kLpdt), b_early(5, ByteAccounting::kLpdt);
  for (std::int64_t round = 0; round < 4; ++round) {
    const EdgeBytes edges = bytes_over_edges(w, payload);
    a.record_round(round, edges.sent * in_a, edges.received * in_a);
    if (round < 2) b_early.record_round(round, edges.sent * (1 - in_a), edges.received * (1 - in_a));
  }
  EXPECT_THROW(ByteLedger(a).add(b_early), UserError);
  ByteLedger sum = a;
  sum.add_node_totals(b_early);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(sum.bytes_sent_per_node()[i],
              a.bytes_sent_per_node()[i] + b_early.bytes_sent_per_node()[i])
        << "node " << i;
  }
  EXPECT_GT(sum.bytes_sent_per_node()[3], 0);
  EXPECT_EQ(sum.rounds(), a.rounds());
  EXPECT_THROW(sum.add_node_totals(ByteLedger(4, ByteAccounting::kLpdt)), UserError);
  EXPECT_THROW(sum.add_node_totals(ByteLedger(5, ByteAccounting::kReference)), UserError);
}

}  // namespace
}  // namespace lpdt::metrics
