#include "lpdt/algo/lr_schedule.h"

#include <cmath>
#include <sstream>

#include "lpdt/core/error.h"

namespace lpdt::algo {
namespace {
constexpr double kPi = 3.14159265358979323846;

template <typename T>
[[noreturn]] void config_error(const char* what, const T& got) {
  std::ostringstream msg;
  msg << what << ", got " << got;
  throw ConfigError(msg.str());
}
}  // namespace

LrSchedule::LrSchedule(const LrScheduleOptions& options) : options_(options) {
  const std::string& kind = options_.kind();
  if (kind == "constant") {
    kind_ = Kind::kConstant;
  } else if (kind == "multistep") {
    kind_ = Kind::kMultistep;
  } else if (kind == "cosine") {
    kind_ = Kind::kCosine;
  } else {
    throw ConfigError("lr schedule must be constant, multistep or cosine, got '" + kind + "'");
  }
  if (!(options_.base_lr() > 0.0)) config_error("base lr must be > 0", options_.base_lr());
  if (kind_ == Kind::kMultistep) {
    if (!(options_.gamma() > 0.0)) config_error("multistep gamma must be > 0", options_.gamma());
    std::int64_t previous = -1;
    for (auto m : options_.milestones()) {
      if (m <= previous) config_error("multistep milestones must be increasing epochs >= 0", m);
      previous = m;
    }
  }
  if (kind_ == Kind::kCosine && options_.total_epochs() <= 0) {
    config_error("cosine schedule needs total_epochs > 0", options_.total_epochs());
  }
  if (options_.warmup_epochs() < 0) {
    config_error("warmup_epochs must be >= 0", options_.warmup_epochs());
  }
  if (!(options_.warmup_factor() > 0.0)) {
    config_error("warmup_factor must be > 0", options_.warmup_factor());
  }
}

LrScheduleOptions LrSchedule::official(double base_lr, bool vgg) {
  LrScheduleOptions o;
  o.kind("multistep").base_lr(base_lr).warmup_epochs(1).warmup_factor(0.1);
  if (vgg) {
    o.milestones({30, 60, 90, 120, 150, 180}).gamma(0.5);
  } else {
    o.milestones({100, 150}).gamma(0.1);
  }
  return o;
}

double LrSchedule::lr(std::int64_t epoch, std::int64_t step, std::int64_t steps_per_epoch) const {
  LPDT_CHECK(epoch >= 0 && steps_per_epoch > 0 && step >= 0 && step < steps_per_epoch,
             "lr schedule: need epoch >= 0 and 0 <= step < steps_per_epoch");
  double lr = options_.base_lr();
  switch (kind_) {
    case Kind::kConstant:
      break;
    case Kind::kMultistep:
      // torch MultiStepLR, stepped after every epoch: epoch e runs with gamma^#{m <= e}.
      for (auto m : options_.milestones()) {
        if (m <= epoch) lr *= options_.gamma();
      }
      break;
    case Kind::kCosine: {
      const double t = static_cast<double>(epoch * steps_per_epoch + step);
      const double total = static_cast<double>(options_.total_epochs() * steps_per_epoch);
      const double progress = std::min(1.0, t / total);
      lr *= 0.5 * (1.0 + std::cos(kPi * progress));
      break;
    }
  }
  if (epoch < options_.warmup_epochs()) lr *= options_.warmup_factor();
  return lr;
}

}  // namespace lpdt::algo
