#pragma once
// Learning-rate schedules: lr as a function of (epoch, step within the epoch, steps per epoch).
//
//  constant:   lr = base
//  multistep:  lr = base * gamma^(number of milestones m <= epoch)   (torch MultiStepLR stepped
//              once per epoch; official ResNet: milestones {100, 150}, gamma 0.1; VGG: {30, 60,
//              ..., 180}, gamma 0.5)
//  cosine:     lr = base * (1 + cos(pi t / T)) / 2,  t = epoch * steps_per_epoch + step,
//              T = total_epochs * steps_per_epoch  (base at t = 0, zero at t = T)
//  warm-up (combinable with each): during the first warmup_epochs epochs the schedule's lr is
//  multiplied by warmup_factor. The official code (reference spec 2) runs epoch 0 at 0.1 x lr:
//  warmup_epochs = 1, warmup_factor = 0.1.
#include <torch/arg.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lpdt::algo {

struct LrScheduleOptions {
  TORCH_ARG(std::string, kind) = "constant";  // "constant" | "multistep" | "cosine"
  TORCH_ARG(double, base_lr) = 0.1;
  TORCH_ARG(std::vector<std::int64_t>, milestones) = {};  // epochs, increasing (multistep)
  TORCH_ARG(double, gamma) = 0.1;                         // multistep factor, > 0
  TORCH_ARG(std::int64_t, total_epochs) = 0;              // cosine: > 0
  TORCH_ARG(std::int64_t, warmup_epochs) = 0;             // official: 1
  TORCH_ARG(double, warmup_factor) = 0.1;                 // official: 0.1
};

class LrSchedule {
 public:
  // ConfigError for an unknown kind, base_lr <= 0, milestones not increasing or negative,
  // gamma <= 0, cosine without total_epochs > 0, warmup_epochs < 0, warmup_factor <= 0.
  explicit LrSchedule(const LrScheduleOptions& options);

  // The official schedule of the paper's runs: multistep {100, 150} x0.1 (ResNet) or
  // {30, 60, 90, 120, 150, 180} x0.5 (VGG, arch "vgg"), with the 0.1 x warm-up epoch 0.
  static LrScheduleOptions official(double base_lr, bool vgg);

  // epoch >= 0, 0 <= step < steps_per_epoch, steps_per_epoch > 0.
  double lr(std::int64_t epoch, std::int64_t step, std::int64_t steps_per_epoch) const;

  const LrScheduleOptions& options() const { return options_; }

 private:
  enum class Kind { kConstant, kMultistep, kCosine };
  LrScheduleOptions options_;
  Kind kind_;
};

}  // namespace lpdt::algo
