// The operator profile (`lpdt bench --precision --profile`): counts every operator call, splits
// nested time into self and total, accounts for the whole wall time, and refuses nesting.
#include "lpdt/exp/operator_profile.h"

#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/types.h>

#include <chrono>
#include <thread>

#include "lpdt/core/error.h"
#include "lpdt/core/pass_workers.h"

namespace lpdt::exp {
namespace {

const OperatorTime* find(const OperatorProfile& p, const std::string& name) {
  for (const auto& op : p.operators) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

TEST(OperatorProfile, CountsCallsAndSplitsNestedTime) {
  const at::Tensor a = torch::randn({64, 64}), b = torch::randn({64, 64});
  const OperatorProfile p = profile_operators(
      [&] {
        for (int step = 0; step < 4; ++step) {
          RECORD_FUNCTION("test::outer", std::vector<c10::IValue>());
          std::this_thread::sleep_for(std::chrono::milliseconds(3));  // the outer range's own time
          for (int i = 0; i < 5; ++i) (void)at::mm(a, b);
          (void)(a + b);
        }
      },
      /*steps=*/4);
  const OperatorTime* outer = find(p, "test::outer");
  const OperatorTime* mm = find(p, "aten::mm");
  const OperatorTime* add = find(p, "aten::add");
  ASSERT_NE(outer, nullptr);
  ASSERT_NE(mm, nullptr);
  ASSERT_NE(add, nullptr);
  EXPECT_DOUBLE_EQ(outer->calls_per_step, 1.0);
  EXPECT_DOUBLE_EQ(mm->calls_per_step, 5.0);
  EXPECT_DOUBLE_EQ(add->calls_per_step, 1.0);
  // The sleep is the outer range's self time; its total holds its children's too.
  EXPECT_GE(outer->self_ms_per_step, 3.0);
  EXPECT_GT(outer->total_ms_per_step, outer->self_ms_per_step);
  EXPECT_NEAR(outer->total_ms_per_step - outer->self_ms_per_step,
              mm->total_ms_per_step + add->total_ms_per_step, 0.05);
  // Self times and the time outside any operator add up to the wall time.
  double self = p.outside_ms_per_step;
  for (const auto& op : p.operators) {
    EXPECT_GE(op.self_ms_per_step, 0.0) << op.name;
    EXPECT_GE(op.total_ms_per_step, op.self_ms_per_step - 1e-9) << op.name;
    self += op.self_ms_per_step;
  }
  EXPECT_NEAR(self, p.wall_ms_per_step, 0.02 * p.wall_ms_per_step);
  // Longest self time first.
  for (std::size_t i = 1; i < p.operators.size(); ++i) {
    EXPECT_GE(p.operators[i - 1].self_ms_per_step, p.operators[i].self_ms_per_step);
  }
  EXPECT_EQ(p.operators.front().name, "test::outer");
}

TEST(OperatorProfile, FormatsTheFirstRowsAndTheRest) {
  const at::Tensor a = torch::randn({8, 8});
  const OperatorProfile p = profile_operators(
      [&] {
        (void)(a + a);
        (void)(a * a);
        (void)a.sum();
      },
      1);
  ASSERT_GE(p.operators.size(), 3u);
  const auto lines = format_operator_profile(p, 2);
  // header, two rows, the rest, outside, wall
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_NE(lines[1].find(p.operators[0].name), std::string::npos);
  EXPECT_NE(lines[3].find("other operators"), std::string::npos);
  EXPECT_NE(lines[4].find("outside any operator"), std::string::npos);
  EXPECT_NE(lines[5].find("wall time"), std::string::npos);
}

TEST(OperatorProfile, RefusesNestingAndBadStepCounts) {
  EXPECT_THROW(profile_operators([] {}, 0), UserError);
  EXPECT_THROW(profile_operators([] { profile_operators([] {}, 1); }, 1), UserError);
  // The observer is removed after an error: a later profile works.
  EXPECT_THROW(profile_operators([] { throw UserError("inside"); }, 1), UserError);
  const at::Tensor a = torch::ones({4});
  const OperatorProfile p = profile_operators([&] { (void)(a + a); }, 1);
  ASSERT_NE(find(p, "aten::add"), nullptr);
  EXPECT_DOUBLE_EQ(find(p, "aten::add")->calls_per_step, 1.0);
}

// Pass workers take the caller's thread-local state, the observer with it: their operators are
// counted, on their own threads, and the rows add up to the threads' time, not the wall time.
TEST(OperatorProfile, ObservesThePassWorkers) {
  const at::Tensor a = torch::randn({128, 128}), b = torch::randn({128, 128});
  PassWorkers& workers = pass_workers(2);
  const OperatorProfile p = profile_operators(
      [&] {
        for (int step = 0; step < 3; ++step) {
          (void)(a + b);  // on the calling thread
          workers.run(4, [&](std::int64_t) {
            RECORD_FUNCTION("test::pass", std::vector<c10::IValue>());
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            for (int i = 0; i < 3; ++i) (void)at::mm(a, b);
          });
        }
      },
      /*steps=*/3);
  const OperatorTime* pass = find(p, "test::pass");
  const OperatorTime* mm = find(p, "aten::mm");
  const OperatorTime* add = find(p, "aten::add");
  ASSERT_NE(pass, nullptr);
  ASSERT_NE(mm, nullptr);
  ASSERT_NE(add, nullptr);
  EXPECT_DOUBLE_EQ(pass->calls_per_step, 4.0);
  EXPECT_DOUBLE_EQ(mm->calls_per_step, 12.0);
  EXPECT_DOUBLE_EQ(add->calls_per_step, 1.0);
  EXPECT_GE(pass->self_ms_per_step, 4 * 2.0);  // the four passes' sleeps, summed over threads
  // The caller and at least one worker; the workers' ranges are nested on their own threads.
  EXPECT_GE(p.threads, 2);
  EXPECT_LE(p.threads, 3);
  EXPECT_NEAR(pass->total_ms_per_step - pass->self_ms_per_step, mm->total_ms_per_step,
              0.05 + 0.01 * mm->total_ms_per_step);
  double self = p.outside_ms_per_step;
  for (const auto& op : p.operators) self += op.self_ms_per_step;
  EXPECT_NEAR(self, p.thread_ms_per_step, 1e-6 * self);
  // The caller waited while the workers ran: its time outside operators holds the wait, and the
  // threads' time exceeds the wall time once two passes overlap (two workers, four 2 ms passes).
  EXPECT_GT(p.thread_ms_per_step, p.wall_ms_per_step);
  const auto lines = format_operator_profile(p, 50);
  EXPECT_NE(lines[lines.size() - 2].find("threads observed"), std::string::npos)
      << lines[lines.size() - 2];
  EXPECT_NE(lines.back().find("wall time"), std::string::npos);
  // A later profile without workers observes one thread (recorders are not kept across profiles).
  const OperatorProfile alone = profile_operators([&] { (void)(a + a); }, 1);
  EXPECT_EQ(alone.threads, 1);
  EXPECT_DOUBLE_EQ(find(alone, "aten::add")->calls_per_step, 1.0);
}

}  // namespace
}  // namespace lpdt::exp
