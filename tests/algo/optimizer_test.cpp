// Local optimizers (SGD / Nesterov, QGM) and the DecentralizedOptimizer's options, state, bytes.
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <functional>
#include <limits>

#include "graphs.h"
#include "lpdt/algo/decentralized_optimizer.h"
#include "lpdt/algo/local_sgd.h"
#include "lpdt/core/error.h"
#include "reference_loop.h"

namespace lpdt::algo {
namespace {

using testing::directed_ring;
using testing::irregular_directed;
using testing::small_layout;

constexpr double kHandTolerance = 1e-6;  // float32 vs hand arithmetic on O(1) numbers
constexpr double kLoopTolerance = 2e-5;  // float32 batched vs double reference loop

double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

// Two nodes; node 0 is the hand-computed example, node 1 starts elsewhere (rows independent).
//   z = (1, -2), wd = 0.1, mu = 0.9, lr = 0.1, g1 = (0.5, 0.1), g2 = (0.2, -0.3)
// Nesterov: step 1: d = (0.6, -0.1), buf = d, d + 0.9 buf = (1.14, -0.19), z = (0.886, -1.981)
//           step 2: d = (0.2886, -0.4981), buf = (0.8286, -0.5881),
//                   d + 0.9 buf = (1.03434, -1.02739), z = (0.782566, -1.878261)
// Heavy ball: z1 = (0.94, -1.99); d = (0.294, -0.499), buf = (0.834, -0.589),
//             z2 = (0.8566, -1.9311)
TEST(LocalSgd, NesterovAndHeavyBallHandComputed) {
  for (bool nesterov : {true, false}) {
    LocalSgd sgd(SgdOptions().momentum(0.9).nesterov(nesterov).weight_decay(0.1), 2, 2,
                 torch::kCPU);
    auto z = torch::tensor({1.0f, -2.0f, 5.0f, 5.0f}).reshape({2, 2});
    sgd.step(z, torch::tensor({0.5f, 0.1f, 0.0f, 0.0f}).reshape({2, 2}), 0.1, {});
    sgd.step(z, torch::tensor({0.2f, -0.3f, 0.0f, 0.0f}).reshape({2, 2}), 0.1, {});
    const auto expected0 = nesterov ? torch::tensor({0.782566, -1.878261}, torch::kDouble)
                                    : torch::tensor({0.8566, -1.9311}, torch::kDouble);
    EXPECT_LT(max_abs_diff(z[0], expected0), kHandTolerance) << "nesterov " << nesterov << z;
    // Node 1: pure weight decay with momentum: d1 = 0.5, buf 0.5, z = 5 - 0.1 (0.5 + 0.45) ...
    EXPECT_LT(z[1][0].item<float>(), 5.0f);
    EXPECT_EQ(z[1][0].item<float>(), z[1][1].item<float>());
  }
}

TEST(LocalSgd, SameThroughDecentralizedOptimizerOnOneNode) {
  LayerLayout layout;
  layout.append("w", {2});
  DecentralizedOptimizer opt(
      DecentralizedOptions().algorithm("dpsgd").momentum(0.9).nesterov(true).weight_decay(0.1), 1,
      layout);
  auto ledger = opt.make_ledger();
  auto x = torch::tensor({1.0f, -2.0f}).reshape({1, 2});
  const auto w = torch::ones({1, 1});
  opt.step(x, torch::tensor({0.5f, 0.1f}).reshape({1, 2}), w, 0.1, 0, ledger);
  opt.step(x, torch::tensor({0.2f, -0.3f}).reshape({1, 2}), w, 0.1, 1, ledger);
  EXPECT_LT(max_abs_diff(x[0], torch::tensor({0.782566, -1.878261}, torch::kDouble)),
            kHandTolerance);
  EXPECT_EQ(ledger.total_bytes_sent(), 0);  // no out-edges
}

TEST(LocalSgd, OptionErrors) {
  EXPECT_THROW(LocalSgd(SgdOptions().momentum(1.0), 1, 1, torch::kCPU), ConfigError);
  EXPECT_THROW(LocalSgd(SgdOptions().momentum(-0.1), 1, 1, torch::kCPU), ConfigError);
  EXPECT_THROW(LocalSgd(SgdOptions().weight_decay(-1), 1, 1, torch::kCPU), ConfigError);
}

// Masked segments get no update and no weight decay (and no momentum), but are still gossiped.
TEST(DecentralizedOptimizer, TrainableMask) {
  const auto layout = small_layout();
  torch::manual_seed(1);
  auto x = torch::randn({4, layout.total_numel});
  const auto x0 = x.clone();
  std::vector<bool> trainable(layout.segments.size(), true);
  trainable[2] = false;  // "norm.v"
  const auto mask = columns_mask(layout, trainable);
  EXPECT_EQ(mask.sum().item<std::int64_t>(), layout.total_numel - 1);
  for (bool qgm : {false, true}) {
    DecentralizedOptimizer opt(DecentralizedOptions().algorithm("dpsgd").weight_decay(0.5).qgm(qgm),
                               4, layout);
    opt.set_trainable(mask);
    auto ledger = opt.make_ledger();
    auto y = x0.clone();
    const auto identity = torch::eye(4);
    for (int t = 0; t < 3; ++t) opt.step(y, torch::randn_like(y), identity, 0.1, t, ledger);
    const auto col = layout.segments[2].offset;
    EXPECT_TRUE(torch::equal(y.select(1, col), x0.select(1, col))) << "qgm " << qgm;
    EXPECT_GT(max_abs_diff(y, x0), 0.01);
    // Still gossiped: with a ring the masked column mixes.
    opt.step(y, torch::zeros_like(y), directed_ring(4), 0.1, 3, ledger);
    EXPECT_FALSE(torch::equal(y.select(1, col), x0.select(1, col)));
  }
}

// QGM (Lin et al. 2021) against the official two-part form (spec 4.2), with ps = 1 (directed
// ring: doubly stochastic), for D-PSGD and Choco with top-k.
TEST(Qgm, MatchesOfficialEquations) {
  const auto layout = small_layout();
  const auto w = directed_ring(6);
  for (const char* algorithm : {"dpsgd", "choco", "deepsqueeze"}) {
    for (bool nesterov : {true, false}) {
      SCOPED_TRACE(std::string(algorithm) + (nesterov ? " nesterov" : " heavy-ball"));
      torch::manual_seed(2);
      auto x = torch::randn({6, layout.total_numel});
      const auto targets = torch::randn({6, layout.total_numel});
      const bool compress = std::string(algorithm) != "dpsgd";
      DecentralizedOptimizer opt(DecentralizedOptions()
                                     .algorithm(algorithm)
                                     .compressor(compress::CompressorOptions()
                                                     .name(compress ? "topk" : "none")
                                                     .keep_fraction(0.25))
                                     .eta(compress ? 0.3 : 1.0)
                                     .momentum(0.9)
                                     .nesterov(nesterov)
                                     .weight_decay(1e-3)
                                     .qgm(true),
                                 6, layout);
      testing::ReferenceConfig rc;
      rc.algorithm = algorithm;
      rc.identity = !compress;
      rc.keep = 0.25;
      rc.eta = compress ? 0.3 : 1.0;
      rc.nesterov = nesterov;
      rc.weight_decay = 1e-3;
      rc.qgm = true;
      testing::ReferenceLoop ref(rc, layout, x);
      auto ledger = opt.make_ledger();
      for (int t = 0; t < 30; ++t) {
        const double lr = t < 15 ? 0.1 : 0.05;
        const auto grad_ref = ref.x().to(torch::kFloat) - targets;
        opt.step(x, x - targets, w, lr, t, ledger);
        ref.step(grad_ref, w, lr);
        ASSERT_LT(max_abs_diff(x, ref.x()), kLoopTolerance) << "iteration " << t;
        ASSERT_LT(max_abs_diff(opt.state().at("qgm_buffer"), ref.qgm_buffer()), 10 * kLoopTolerance)
            << "iteration " << t;
      }
      EXPECT_EQ(opt.state().count("momentum"), 0u);
    }
  }
}

TEST(Qgm, NeedsPositiveLr) {
  const auto layout = small_layout();
  DecentralizedOptimizer opt(DecentralizedOptions().algorithm("dpsgd").qgm(true), 2, layout);
  auto ledger = opt.make_ledger();
  auto x = torch::zeros({2, layout.total_numel});
  EXPECT_THROW(opt.step(x, x, torch::eye(2), 0.0, 0, ledger), UserError);
}

TEST(DecentralizedOptimizer, OptionErrorsNameTheValue) {
  const auto layout = small_layout();
  const auto expect_config_error = [&](const DecentralizedOptions& o, const std::string& needle) {
    try {
      DecentralizedOptimizer opt(o, 3, layout);
      ADD_FAILURE() << "no ConfigError for " << needle;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_config_error(DecentralizedOptions().eta(0.0), "eta");
  expect_config_error(DecentralizedOptions().eta(1.5), "1.5");
  expect_config_error(DecentralizedOptions().momentum(1.0), "momentum");
  expect_config_error(DecentralizedOptions().weight_decay(-1.0), "weight_decay");
  expect_config_error(
      DecentralizedOptions().weight_decay(std::numeric_limits<double>::infinity()),
      "finite and >= 0");
  expect_config_error(DecentralizedOptions().optimizer("adam").weight_decay(
                          std::numeric_limits<double>::infinity()),
                      "finite and >= 0");
  expect_config_error(DecentralizedOptions().algorithm("admm"), "admm");
  expect_config_error(DecentralizedOptions().accounting("bits"), "bits");
  expect_config_error(DecentralizedOptions().algorithm("dpsgd").compressor(
                          compress::CompressorOptions().name("topk").keep_fraction(0.1)),
                      "topk");
  expect_config_error(DecentralizedOptions().compressor(
                          compress::CompressorOptions().name("topk").keep_fraction(0.0)),
                      "keep fraction");
  // Sizes no optimizer can have, and masks of another layout: named, not internal errors.
  EXPECT_THROW(DecentralizedOptimizer(DecentralizedOptions(), -1, layout), UserError);
  EXPECT_THROW(DecentralizedOptimizer(DecentralizedOptions(), 0, layout), UserError);
  EXPECT_THROW(DecentralizedOptimizer(DecentralizedOptions(), 3, LayerLayout{}), UserError);
  EXPECT_THROW(columns_mask(layout, {true}), UserError);
  DecentralizedOptimizer masked(DecentralizedOptions(), 3, layout);
  EXPECT_THROW(masked.set_trainable(torch::ones({layout.total_numel + 1})), UserError);
  EXPECT_EQ(parse_algorithm("sparse-push"), Algorithm::kDeepSqueeze);
  EXPECT_EQ(parse_algorithm("quant-sgp"), Algorithm::kChoco);
}

// state() exposes every buffer; restoring it into a fresh optimizer continues bit for bit.
TEST(DecentralizedOptimizer, StateRoundTrip) {
  const auto layout = small_layout();
  const auto w = irregular_directed();
  for (const char* algorithm : {"choco", "deepsqueeze"}) {
    for (bool qgm : {false, true}) {
      SCOPED_TRACE(std::string(algorithm) + (qgm ? " qgm" : ""));
      const auto options =
          DecentralizedOptions()
              .algorithm(algorithm)
              .compressor(compress::CompressorOptions().name("randomk").keep_fraction(0.2).seed(5))
              .eta(0.5)
              .qgm(qgm);
      torch::manual_seed(4);
      auto x = torch::randn({5, layout.total_numel});
      const auto targets = torch::randn_like(x);
      DecentralizedOptimizer a(options, 5, layout);
      auto ledger_a = a.make_ledger();
      for (int t = 0; t < 5; ++t) a.step(x, x - targets, w, 0.1, t, ledger_a);
      std::map<std::string, torch::Tensor> saved;
      for (auto& [name, t] : a.state()) saved[name] = t.clone();
      const auto names = [&] {
        std::vector<std::string> v;
        for (auto& kv : saved) v.push_back(kv.first);
        return v;
      }();
      const std::vector<std::string> expected =
          std::string(algorithm) == "choco"
              ? (qgm ? std::vector<std::string>{"ps", "qgm_buffer", "rounds", "xhat"}
                     : std::vector<std::string>{"momentum", "ps", "rounds", "xhat"})
              : (qgm ? std::vector<std::string>{"error_feedback", "ps", "qgm_buffer", "rounds"}
                     : std::vector<std::string>{"error_feedback", "momentum", "ps", "rounds"});
      EXPECT_EQ(names, expected);
      EXPECT_EQ(saved.at("rounds").item<std::int64_t>(), 5);
      auto y = x.clone();
      for (int t = 5; t < 10; ++t) a.step(x, x - targets, w, 0.1, t, ledger_a);
      DecentralizedOptimizer b(options, 5, layout);
      b.load_state(saved);
      auto ledger_b = b.make_ledger();
      for (int t = 5; t < 10; ++t) b.step(y, y - targets, w, 0.1, t, ledger_b);
      EXPECT_TRUE(torch::equal(x, y));
      // A refused state changes nothing: every tensor is checked before any is copied.
      const auto before = b.state().at("rounds").item<std::int64_t>();
      for (const auto& [name, bad] :
           std::vector<std::pair<std::string, torch::Tensor>>{
               {"rounds", torch::tensor(2.7)},                    // a count stored as a float
               {"ps", torch::full({5}, -1.0f)},                   // a negative weight
               {algorithm == std::string("choco") ? "xhat" : "error_feedback",
                torch::zeros({5, layout.total_numel + 1})}}) {  // another model
        auto broken = saved;
        broken["rounds"] = torch::tensor(std::int64_t{7});
        broken[name] = bad;
        EXPECT_THROW(b.load_state(broken), UserError) << name;
        EXPECT_EQ(b.state().at("rounds").item<std::int64_t>(), before) << name;
      }
      saved.erase("ps");
      EXPECT_THROW(b.load_state(saved), UserError);
    }
  }
}

// A call with a bad argument is refused by name before anything changes: the same calls
// retried correctly then give exactly the run that never had the bad call.
TEST(DecentralizedOptimizer, ARefusedCallChangesNothing) {
  const auto layout = small_layout();
  const auto w = irregular_directed();  // [5, 5]
  const auto options = DecentralizedOptions().algorithm("choco").compressor(
      compress::CompressorOptions().name("topk").keep_fraction(0.3));
  torch::manual_seed(2);
  const auto start = torch::randn({5, layout.total_numel});
  const auto targets = torch::randn_like(start);
  DecentralizedOptimizer clean(options, 5, layout);
  DecentralizedOptimizer tried(options, 5, layout);
  auto clean_ledger = clean.make_ledger();
  auto tried_ledger = tried.make_ledger();
  auto x = start.clone();
  auto y = start.clone();
  clean.step(x, x - targets, w, 0.1, 0, clean_ledger);
  tried.step(y, y - targets, w, 0.1, 0, tried_ledger);

  const auto refused = [&](const std::function<void()>& call, const std::string& expected) {
    try {
      call();
      ADD_FAILURE() << "accepted; expected: " << expected;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  const auto grad = y - targets;
  refused([&] { tried.step(y, grad, w, 0.1, 0, tried_ledger); }, "round 0 is not after the ledger's last round, 0");
  auto other_ledger = metrics::ByteLedger(4, metrics::ByteAccounting::kLpdt);
  refused([&] { tried.step(y, grad, w, 0.1, 1, other_ledger); }, "counts 4 nodes");
  auto y64 = y.to(torch::kDouble);
  refused([&] { tried.step(y64, grad, w, 0.1, 1, tried_ledger); }, "x must be [5, ");
  refused([&] { tried.step(y, grad.narrow(1, 0, 3), w, 0.1, 1, tried_ledger); },
          "grad must have x's shape");
  refused([&] { tried.step(y, grad, w.narrow(0, 0, 4), 0.1, 1, tried_ledger); },
          "mixing must be [5, 5] float32");
  auto nan = w.clone();
  nan[1][0] = std::numeric_limits<float>::quiet_NaN();
  refused([&] { tried.step(y, grad, nan, 0.1, 1, tried_ledger); }, "not finite");
  auto negative = w.clone();
  negative[1][0] -= 2.0f;
  negative[0][0] += 2.0f;  // the column still sums to 1
  refused([&] { tried.step(y, grad, negative, 0.1, 1, tried_ledger); }, "negative weight");
  auto no_self = w.clone();
  no_self[2][2] = 0.0f;
  refused([&] { tried.step(y, grad, no_self, 0.1, 1, tried_ledger); }, "self weight");
  auto not_stochastic = w.clone();
  not_stochastic[3][3] += 0.01f;
  refused([&] { tried.step(y, grad, not_stochastic, 0.1, 1, tried_ledger); }, "column 3 sums");
  // The same matrix changed in place after it was checked is checked again.
  auto changed = w.clone();
  tried.gossip_round(y, changed, 1, tried_ledger);
  clean.gossip_round(x, w, 1, clean_ledger);
  changed[0][0] += 0.5f;
  refused([&] { tried.gossip_round(y, changed, 2, tried_ledger); }, "column 0 sums");

  clean.step(x, x - targets, w, 0.1, 2, clean_ledger);
  tried.step(y, y - targets, w, 0.1, 2, tried_ledger);
  EXPECT_TRUE(torch::equal(x, y));
  EXPECT_EQ(tried.rounds_done(), clean.rounds_done());
  EXPECT_EQ(tried_ledger.total_bytes_sent(), clean_ledger.total_bytes_sent());
}

// The ledger receives payload x out-degree per node and round.
TEST(DecentralizedOptimizer, RecordsBytesPerOutEdge) {
  const auto layout = small_layout();  // P = 76; top-k 0.1 keeps {3, 1, 1, 3, 1} = 9
  const auto w = irregular_directed();
  const auto out_degree = std::vector<std::int64_t>{3, 2, 2, 1, 1};
  for (const char* accounting : {"lpdt", "reference"}) {
    DecentralizedOptimizer opt(
        DecentralizedOptions()
            .algorithm("choco")
            .compressor(compress::CompressorOptions().name("topk").keep_fraction(0.1))
            .accounting(accounting),
        5, layout);
    auto ledger = opt.make_ledger();
    auto x = torch::randn({5, layout.total_numel});
    for (int t = 0; t < 4; ++t) opt.step(x, torch::zeros_like(x), w, 0.1, t, ledger);
    if (std::string(accounting) == "reference") {
      // The official count: 6 V + 3 per message, the latest round still pending.
      const std::int64_t payload = 6 * 9 + 3;
      for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(ledger.bytes_sent_per_node()[i], payload * out_degree[i] * 3) << accounting;
      }
      EXPECT_EQ(ledger.bytes_sent_in_round(3), payload * 9);
      continue;
    }
    // lpdt: the encoded payload (docs/wire.md). Per message: 36 header bytes, 10 per layer, 4
    // per fp32 value, and the indices of each sparse layer in the smallest format. Segments
    // (numel, K): (36, 3), (4, 1), (1, 1: sent whole), (30, 3), (5, 1); every gap is < 128, so
    // delta varints take 1 byte per index (bitmaps 5, 1, 4, 1 bytes; u32 4 per index):
    // 3 + 1 + 3 + 1 index bytes.
    const std::int64_t payload = 36 + 5 * 10 + 4 * 9 + (3 + 1 + 3 + 1);
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(ledger.bytes_sent_per_node()[i], payload * out_degree[i] * 4) << "node " << i;
    }
    EXPECT_EQ(ledger.bytes_sent_in_round(3), payload * 9);
  }
  // Dense D-PSGD: 36 + 10 per layer + 4 P per message.
  DecentralizedOptimizer dense(DecentralizedOptions().algorithm("dpsgd"), 5, layout);
  auto ledger = dense.make_ledger();
  auto x = torch::randn({5, layout.total_numel});
  dense.step(x, torch::zeros_like(x), w, 0.1, 0, ledger);
  EXPECT_EQ(ledger.bytes_sent_per_node()[0], 3 * (36 + 5 * 10 + 4 * 76));
  // int8 values: 1 byte per value, 5 more per layer (scale, zero point).
  DecentralizedOptimizer int8(
      DecentralizedOptions().algorithm("choco").compressor(
          compress::CompressorOptions().values(compress::MessageValues::kInt8)),
      5, layout);
  auto int8_ledger = int8.make_ledger();
  int8.step(x, torch::zeros_like(x), w, 0.1, 0, int8_ledger);
  EXPECT_EQ(int8_ledger.bytes_sent_per_node()[0], 3 * (36 + 5 * 15 + 76));
}

// A step replayed from a CUDA graph leaves its host bookkeeping to account_replayed_round: the
// ledger and round counter must read as if the step had run (here checked against real steps).
TEST(DecentralizedOptimizer, ReplayedRoundsAreAccountedAsRealOnes) {
  const auto layout = small_layout();
  const auto w = irregular_directed();
  // Dense messages (a captured step's payload size cannot change), or top-k counted as the
  // official code does.
  for (const auto& options :
       {DecentralizedOptions().algorithm("choco"),
        DecentralizedOptions().algorithm("choco").accounting("reference").compressor(
            compress::CompressorOptions().name("topk").keep_fraction(0.1))}) {
  DecentralizedOptimizer real(options, 5, layout), replayed(options, 5, layout);
  auto real_ledger = real.make_ledger(), replayed_ledger = replayed.make_ledger();
  auto x = torch::randn({5, layout.total_numel});
  auto y = x.clone();
  EXPECT_THROW(replayed.account_replayed_round(w, 0, replayed_ledger), InternalError);
  for (int t = 0; t < 3; ++t) real.step(x, torch::zeros_like(x), w, 0.1, t, real_ledger);
  replayed.step(y, torch::zeros_like(y), w, 0.1, 0, replayed_ledger);
  for (int t = 1; t < 3; ++t) replayed.account_replayed_round(w, t, replayed_ledger);
  EXPECT_EQ(replayed.rounds_done(), real.rounds_done());
  EXPECT_EQ(replayed_ledger.bytes_sent_per_node(), real_ledger.bytes_sent_per_node());
  EXPECT_EQ(replayed_ledger.bytes_sent_in_round(2), real_ledger.bytes_sent_in_round(2));
  }
}

}  // namespace
}  // namespace lpdt::algo
