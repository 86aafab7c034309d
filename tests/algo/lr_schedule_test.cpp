#include "lpdt/algo/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>

#include "lpdt/core/error.h"

namespace lpdt::algo {
namespace {

constexpr double kTol = 1e-12;

TEST(LrSchedule, OfficialResNetWarmupAndMilestones) {
  const LrSchedule s(LrSchedule::official(0.1, /*vgg=*/false));
  EXPECT_NEAR(s.lr(0, 0, 196), 0.01, kTol);  // warm-up epoch 0: 0.1 x lr
  EXPECT_NEAR(s.lr(0, 195, 196), 0.01, kTol);
  EXPECT_NEAR(s.lr(1, 0, 196), 0.1, kTol);
  EXPECT_NEAR(s.lr(99, 195, 196), 0.1, kTol);
  EXPECT_NEAR(s.lr(100, 0, 196), 0.01, kTol);
  EXPECT_NEAR(s.lr(149, 10, 196), 0.01, kTol);
  EXPECT_NEAR(s.lr(150, 0, 196), 0.001, kTol);
  EXPECT_NEAR(s.lr(199, 195, 196), 0.001, kTol);
}

TEST(LrSchedule, OfficialVggHalving) {
  const LrSchedule s(LrSchedule::official(0.1, /*vgg=*/true));
  EXPECT_NEAR(s.lr(0, 0, 10), 0.01, kTol);
  EXPECT_NEAR(s.lr(29, 0, 10), 0.1, kTol);
  EXPECT_NEAR(s.lr(30, 0, 10), 0.05, kTol);
  EXPECT_NEAR(s.lr(60, 0, 10), 0.025, kTol);
  EXPECT_NEAR(s.lr(199, 0, 10), 0.1 * std::pow(0.5, 6), kTol);
}

TEST(LrSchedule, ConstantAndMultistepWithoutWarmup) {
  const LrSchedule c(LrScheduleOptions().kind("constant").base_lr(0.3));
  EXPECT_EQ(c.lr(0, 0, 5), 0.3);
  EXPECT_EQ(c.lr(1000, 4, 5), 0.3);
  const LrSchedule m(
      LrScheduleOptions().kind("multistep").base_lr(1.0).milestones({2, 5}).gamma(0.5));
  EXPECT_EQ(m.lr(0, 0, 5), 1.0);
  EXPECT_EQ(m.lr(1, 4, 5), 1.0);
  EXPECT_EQ(m.lr(2, 0, 5), 0.5);
  EXPECT_EQ(m.lr(4, 4, 5), 0.5);
  EXPECT_EQ(m.lr(5, 0, 5), 0.25);
}

TEST(LrSchedule, CosineEndpointsAndWarmup) {
  const LrSchedule s(LrScheduleOptions().kind("cosine").base_lr(0.2).total_epochs(10));
  EXPECT_NEAR(s.lr(0, 0, 100), 0.2, kTol);  // t = 0: base
  EXPECT_NEAR(s.lr(5, 0, 100), 0.1, kTol);  // t = T/2: half
  const double last = s.lr(9, 99, 100);     // t = T - 1: almost zero
  EXPECT_GT(last, 0.0);
  EXPECT_NEAR(last, 0.2 * 0.5 * (1 + std::cos(M_PI * 999.0 / 1000.0)), kTol);
  EXPECT_LT(last, 1e-5);
  // Monotone decreasing.
  double prev = 1.0;
  for (int e = 0; e < 10; ++e) {
    for (int it = 0; it < 100; it += 7) {
      const double lr = s.lr(e, it, 100);
      EXPECT_LE(lr, prev);
      prev = lr;
    }
  }
  const LrSchedule w(
      LrScheduleOptions().kind("cosine").base_lr(0.2).total_epochs(10).warmup_epochs(1));
  EXPECT_NEAR(w.lr(0, 50, 100), 0.1 * s.lr(0, 50, 100), kTol);
  EXPECT_EQ(w.lr(1, 0, 100), s.lr(1, 0, 100));
}

TEST(LrSchedule, ConfigErrors) {
  EXPECT_THROW(LrSchedule(LrScheduleOptions().kind("step")), ConfigError);
  EXPECT_THROW(LrSchedule(LrScheduleOptions().base_lr(0)), ConfigError);
  EXPECT_THROW(LrSchedule(LrScheduleOptions().kind("multistep").milestones({5, 5})), ConfigError);
  EXPECT_THROW(LrSchedule(LrScheduleOptions().kind("multistep").milestones({3}).gamma(0)),
               ConfigError);
  EXPECT_THROW(LrSchedule(LrScheduleOptions().kind("cosine")), ConfigError);
  EXPECT_THROW(LrSchedule(LrScheduleOptions().warmup_epochs(-1)), ConfigError);
  EXPECT_THROW(LrSchedule(LrScheduleOptions().warmup_factor(0)), ConfigError);
}

}  // namespace
}  // namespace lpdt::algo
