// Adam / AdamW as the local optimizer: against a plain per-element double reference, inside
// Choco-SGD and DeepSqueeze against the reference loop, masked columns, options and checkpoints.
#include "lpdt/algo/local_adam.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>

#include "graphs.h"
#include "lpdt/algo/decentralized_optimizer.h"
#include "lpdt/core/error.h"
#include "reference_loop.h"

namespace lpdt::algo {
namespace {

using testing::irregular_directed;
using testing::small_layout;

constexpr double kAdamTolerance = 1e-5;  // float32 batched vs double reference, |z| = O(1)
constexpr double kLoopTolerance = 2e-5;  // float32 batched vs double reference loop

double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

struct Variant {
  bool decoupled;
  double beta2;
  double weight_decay;
};

// LocalAdam against reference_adam_element applied to every scalar, for several steps with
// random gradients and a changing lr.
TEST(LocalAdam, MatchesScalarReference) {
  const std::vector<Variant> variants = {
      {false, 0.999, 0.0}, {false, 0.9, 1e-2}, {true, 0.999, 0.0}, {true, 0.9, 0.1}};
  for (const Variant& c : variants) {
    SCOPED_TRACE(std::string(c.decoupled ? "adamw" : "adam") + " beta2 " + std::to_string(c.beta2) +
                 " wd " + std::to_string(c.weight_decay));
    const auto options = AdamOptions()
                             .beta1(0.9)
                             .beta2(c.beta2)
                             .eps(1e-8)
                             .weight_decay(c.weight_decay)
                             .decoupled_weight_decay(c.decoupled);
    constexpr std::int64_t n = 3, p = 17;
    LocalAdam adam(options, n, p, torch::kCPU);
    torch::manual_seed(11);
    auto z = torch::randn({n, p});
    auto ref_z = z.to(torch::kDouble);
    auto ref_m = torch::zeros_like(ref_z);
    auto ref_v = torch::zeros_like(ref_z);
    for (int t = 1; t <= 12; ++t) {
      const double lr = t <= 6 ? 0.01 : 0.003;
      const auto grad = torch::randn({n, p});
      adam.step(z, grad, lr, {});
      const auto g = grad.to(torch::kDouble);
      auto zr = ref_z.accessor<double, 2>();
      auto mr = ref_m.accessor<double, 2>();
      auto vr = ref_v.accessor<double, 2>();
      const auto gr = g.accessor<double, 2>();
      for (std::int64_t i = 0; i < n; ++i) {
        for (std::int64_t k = 0; k < p; ++k) {
          testing::reference_adam_element(lr, 0.9, c.beta2, 1e-8, c.weight_decay, c.decoupled, t,
                                          gr[i][k], zr[i][k], mr[i][k], vr[i][k]);
        }
      }
      ASSERT_LT(max_abs_diff(z, ref_z), kAdamTolerance) << "step " << t;
      ASSERT_LT(max_abs_diff(adam.exp_avg(), ref_m), kAdamTolerance) << "step " << t;
      ASSERT_LT(max_abs_diff(adam.exp_avg_sq(), ref_v), kAdamTolerance) << "step " << t;
    }
    EXPECT_EQ(adam.step_count().item<std::int64_t>(), 12);
  }
}

// Known values: the first step without weight decay has mhat = g and vhat = g^2, so every
// coordinate moves by lr g / (|g| + eps) = lr sign(g) (up to eps). AdamW also scales z by
// 1 - lr wd first: z1 = z0 (1 - lr wd) - lr sign(g).
TEST(LocalAdam, FirstStepMovesBySignOfGradient) {
  const auto z0 = torch::tensor({1.0f, -2.0f, 0.5f, 3.0f}).reshape({2, 2});
  const auto grad = torch::tensor({0.3f, -4.0f, 1e-3f, -1e-2f}).reshape({2, 2});
  const double lr = 0.1;
  {
    LocalAdam adam(AdamOptions().beta1(0.9).beta2(0.9), 2, 2, torch::kCPU);
    auto z = z0.clone();
    adam.step(z, grad, lr, {});
    const auto expected = torch::tensor({0.9, -1.9, 0.4, 3.1}, torch::kDouble).reshape({2, 2});
    EXPECT_LT(max_abs_diff(z, expected), 1e-5) << z;
  }
  {
    LocalAdam adamw(AdamOptions().weight_decay(0.5).decoupled_weight_decay(true), 2, 2,
                    torch::kCPU);
    auto z = z0.clone();
    adamw.step(z, grad, lr, {});
    // 1 - lr wd = 0.95
    const auto expected =
        torch::tensor({0.95 - 0.1, -1.9 + 0.1, 0.475 - 0.1, 2.85 + 0.1}, torch::kDouble)
            .reshape({2, 2});
    EXPECT_LT(max_abs_diff(z, expected), 1e-5) << z;
  }
}

TEST(LocalAdam, OptionErrors) {
  EXPECT_THROW(LocalAdam(AdamOptions().beta1(1.0), 1, 1, torch::kCPU), ConfigError);
  EXPECT_THROW(LocalAdam(AdamOptions().beta2(-0.1), 1, 1, torch::kCPU), ConfigError);
  EXPECT_THROW(LocalAdam(AdamOptions().eps(0.0), 1, 1, torch::kCPU), ConfigError);
  EXPECT_THROW(LocalAdam(AdamOptions().weight_decay(-1e-4), 1, 1, torch::kCPU), ConfigError);
}

// One iteration = the Adam step on the numerator z = x ps, then the gossip round of the
// reference loop; a directed irregular graph moves the push-sum weights away from 1.
TEST(LocalAdam, MatchesReferenceLoopInsideChocoAndDeepSqueeze) {
  const auto layout = small_layout();
  const auto w = irregular_directed();
  for (const char* algorithm : {"choco", "deepsqueeze", "dpsgd"}) {
    for (const char* optimizer : {"adam", "adamw"}) {
      SCOPED_TRACE(std::string(algorithm) + " " + optimizer);
      torch::manual_seed(3);
      auto x = torch::randn({5, layout.total_numel});
      const auto targets = torch::randn({5, layout.total_numel});
      const bool compress = std::string(algorithm) != "dpsgd";
      DecentralizedOptimizer opt(DecentralizedOptions()
                                     .algorithm(algorithm)
                                     .compressor(compress::CompressorOptions()
                                                     .name(compress ? "topk" : "none")
                                                     .keep_fraction(0.25))
                                     .eta(compress ? 0.4 : 1.0)
                                     .optimizer(optimizer)
                                     .beta1(0.9)
                                     .beta2(0.9)
                                     .eps(1e-8)
                                     .weight_decay(1e-2),
                                 5, layout);
      testing::ReferenceConfig rc;
      rc.algorithm = algorithm;
      rc.identity = !compress;
      rc.keep = 0.25;
      rc.eta = compress ? 0.4 : 1.0;
      rc.weight_decay = 1e-2;
      rc.optimizer = optimizer;
      rc.beta1 = 0.9;
      rc.beta2 = 0.9;
      rc.eps = 1e-8;
      testing::ReferenceLoop ref(rc, layout, x);
      auto ledger = opt.make_ledger();
      for (int t = 0; t < 20; ++t) {
        const double lr = t < 10 ? 0.01 : 0.005;
        const auto grad_ref = ref.x().to(torch::kFloat) - targets;
        opt.step(x, x - targets, w, lr, t, ledger);
        ref.step(grad_ref, w, lr);
        ASSERT_LT(max_abs_diff(x, ref.x()), kLoopTolerance) << "iteration " << t;
        ASSERT_LT(max_abs_diff(opt.state().at("adam_m"), ref.adam_m()), kLoopTolerance)
            << "iteration " << t;
        ASSERT_LT(max_abs_diff(opt.state().at("adam_v"), ref.adam_v()), kLoopTolerance)
            << "iteration " << t;
      }
      EXPECT_EQ(opt.state().at("adam_step").item<std::int64_t>(), 20);
      EXPECT_EQ(opt.state().count("momentum"), 0u);
      // The push-sum weights moved: the step really acted on numerators with ps != 1.
      EXPECT_GT((opt.push_sum_weights().cpu() - 1).abs().max().item<double>(), 0.01);
    }
  }
}

// Masked segments get no update and no weight decay (Adam's nor AdamW's), but are still
// gossiped.
TEST(LocalAdam, TrainableMask) {
  const auto layout = small_layout();
  torch::manual_seed(1);
  const auto x0 = torch::randn({4, layout.total_numel});
  std::vector<bool> trainable(layout.segments.size(), true);
  trainable[2] = false;  // "norm.v"
  trainable[4] = false;  // "fc.bias"
  const auto mask = columns_mask(layout, trainable);
  for (const char* optimizer : {"adam", "adamw"}) {
    SCOPED_TRACE(optimizer);
    DecentralizedOptimizer opt(
        DecentralizedOptions().algorithm("dpsgd").optimizer(optimizer).weight_decay(0.1), 4,
        layout);
    opt.set_trainable(mask);
    auto ledger = opt.make_ledger();
    auto y = x0.clone();
    const auto identity = torch::eye(4);
    // Positive gradients (|wd z| < 5): every trainable column moves the same way every step.
    for (int t = 0; t < 3; ++t) {
      opt.step(y, torch::randn_like(y).abs() + 5, identity, 0.1, t, ledger);
    }
    const auto masked = mask.logical_not();
    EXPECT_TRUE(torch::equal(y.index({torch::indexing::Slice(), masked}),
                             x0.index({torch::indexing::Slice(), masked})));
    EXPECT_EQ(opt.state()
                  .at("adam_m")
                  .index({torch::indexing::Slice(), masked})
                  .abs()
                  .max()
                  .item<float>(),
              0.0f);
    // Every trainable column moved, by about lr per step.
    EXPECT_GT((y - x0).index({torch::indexing::Slice(), mask}).abs().min().item<float>(), 0.1f);
    // Still gossiped: with a ring the masked columns mix.
    opt.step(y, torch::zeros_like(y), testing::directed_ring(4), 0.1, 3, ledger);
    EXPECT_FALSE(torch::equal(y.index({torch::indexing::Slice(), masked}),
                              x0.index({torch::indexing::Slice(), masked})));
  }
}

TEST(LocalAdam, DecentralizedOptionErrorsNameTheProblem) {
  const auto layout = small_layout();
  const auto expect_config_error = [&](const DecentralizedOptions& o, const std::string& needle) {
    try {
      DecentralizedOptimizer opt(o, 3, layout);
      ADD_FAILURE() << "no ConfigError for " << needle;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_config_error(DecentralizedOptions().optimizer("adam").qgm(true), "cannot run with qgm");
  expect_config_error(DecentralizedOptions().optimizer("adamw").qgm(true), "'adamw'");
  expect_config_error(DecentralizedOptions().optimizer("lion"), "'lion'");
  expect_config_error(DecentralizedOptions().optimizer("adam").beta1(1.0), "beta1");
  expect_config_error(DecentralizedOptions().optimizer("adam").beta2(1.5), "1.5");
  expect_config_error(DecentralizedOptions().optimizer("adamw").eps(0.0), "eps");
  expect_config_error(DecentralizedOptions().optimizer("adam").weight_decay(-1), "weight_decay");
  // SGD's momentum is not read by Adam: momentum 0 with nesterov on is no error there.
  EXPECT_NO_THROW(DecentralizedOptimizer(
      DecentralizedOptions().optimizer("adam").momentum(0.0).nesterov(true), 3, layout));
}

// state() holds m, v and t; restoring it into a fresh optimizer continues bit for bit, and a
// checkpoint without them is refused.
TEST(LocalAdam, CheckpointStateRoundTrip) {
  const auto layout = small_layout();
  const auto w = irregular_directed();
  for (const char* algorithm : {"choco", "deepsqueeze"}) {
    for (const char* optimizer : {"adam", "adamw"}) {
      SCOPED_TRACE(std::string(algorithm) + " " + optimizer);
      const auto options =
          DecentralizedOptions()
              .algorithm(algorithm)
              .compressor(compress::CompressorOptions().name("topk").keep_fraction(0.2))
              .eta(0.5)
              .optimizer(optimizer)
              .beta2(0.9)
              .weight_decay(1e-2);
      torch::manual_seed(4);
      auto x = torch::randn({5, layout.total_numel});
      const auto targets = torch::randn_like(x);
      DecentralizedOptimizer a(options, 5, layout);
      auto ledger_a = a.make_ledger();
      for (int t = 0; t < 5; ++t) a.step(x, x - targets, w, 0.01, t, ledger_a);
      std::map<std::string, torch::Tensor> saved;
      for (auto& [name, t] : a.state()) saved[name] = t.clone();
      std::vector<std::string> names;
      for (auto& kv : saved) names.push_back(kv.first);
      const std::string gossip_state =
          std::string(algorithm) == "choco" ? "xhat" : "error_feedback";
      std::vector<std::string> expected = {"adam_m", "adam_step", "adam_v",
                                           "ps",     "rounds",    gossip_state};
      std::sort(expected.begin(), expected.end());
      EXPECT_EQ(names, expected);
      EXPECT_EQ(saved.at("adam_step").item<std::int64_t>(), 5);
      EXPECT_EQ(saved.at("adam_m").sizes(), x.sizes());

      const auto x5 = x.clone();
      auto y = x.clone();
      for (int t = 5; t < 10; ++t) a.step(x, x - targets, w, 0.01, t, ledger_a);
      DecentralizedOptimizer b(options, 5, layout);
      b.load_state(saved);
      auto ledger_b = b.make_ledger();
      for (int t = 5; t < 10; ++t) b.step(y, y - targets, w, 0.01, t, ledger_b);
      EXPECT_TRUE(torch::equal(x, y));
      EXPECT_TRUE(torch::equal(a.state().at("adam_v"), b.state().at("adam_v")));
      EXPECT_EQ(b.state().at("adam_step").item<std::int64_t>(), 10);

      // Without the step count the bias corrections would restart: refused.
      auto missing = saved;
      missing.erase("adam_step");
      EXPECT_THROW(b.load_state(missing), UserError);
      // The same checkpoint with t reset to 0 continues differently: t is part of the state.
      DecentralizedOptimizer c(options, 5, layout), d(options, 5, layout);
      auto reset = saved;
      reset["adam_step"] = torch::zeros({}, torch::kLong);
      c.load_state(saved);
      d.load_state(reset);
      auto ledger_c = c.make_ledger(), ledger_d = d.make_ledger();
      auto u = x5.clone(), v = x5.clone();
      c.step(u, u - targets, w, 0.01, 5, ledger_c);
      d.step(v, v - targets, w, 0.01, 5, ledger_d);
      EXPECT_GT(max_abs_diff(u, v), 1e-4);
    }
  }
}

}  // namespace
}  // namespace lpdt::algo
