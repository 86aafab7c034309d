#include "lpdt/exp/operator_profile.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <unordered_map>

#include "lpdt/core/error.h"

namespace lpdt::exp {
namespace {

using Clock = std::chrono::steady_clock;

struct Accumulated {
  double self_us = 0, total_us = 0;
  std::int64_t calls = 0;
  int open = 0;  // calls of this operator in progress (recursion counts its total time once)
};

// One operator call in progress on the profiled thread.
struct OpenCall {
  Accumulated* op;
  Clock::time_point start;
  double children_us = 0;
};

// The profiled thread's state. An observer of LibTorch's RecordFunction ranges, not its
// profiler: the legacy profiler made every 2 MiB allocation about 0.3 ms slower on Debian's
// LibTorch 1.13 (an add of two [32, 16, 32, 32] tensors 0.08 -> 0.42 ms), which distorted the
// very operators a ResNet-20 profile is read for; this observer costs a clock read per range.
struct Recorder {
  std::unordered_map<std::string, Accumulated> by_name;
  std::vector<OpenCall> open;
  double outermost_us = 0;  // time inside operators that no other operator called
};

thread_local Recorder* active = nullptr;

struct CallContext : at::ObserverContext {};

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  if (active == nullptr) return nullptr;
  Accumulated& op = active->by_name[fn.name()];
  ++op.open;
  active->open.push_back({&op, Clock::now()});
  return std::make_unique<CallContext>();
}

void on_exit(const at::RecordFunction& /*fn*/, at::ObserverContext* context) {
  if (active == nullptr || context == nullptr || active->open.empty()) return;
  const OpenCall call = active->open.back();
  active->open.pop_back();
  const double inclusive_us =
      std::chrono::duration<double, std::micro>(Clock::now() - call.start).count();
  call.op->self_us += inclusive_us - call.children_us;
  if (--call.op->open == 0) call.op->total_us += inclusive_us;
  ++call.op->calls;
  if (active->open.empty()) {
    active->outermost_us += inclusive_us;
  } else {
    active->open.back().children_us += inclusive_us;
  }
}

}  // namespace

OperatorProfile profile_operators(const std::function<void()>& run_steps, std::int64_t steps) {
  if (steps < 1) throw UserError("profile: the number of profiled steps must be positive");
  if (active != nullptr) {
    throw UserError("profile: operators are already being profiled on this thread");
  }
  Recorder recorder;
  active = &recorder;
  const at::CallbackHandle handle =
      at::addThreadLocalCallback(at::RecordFunctionCallback(on_enter, on_exit).needsInputs(false));
  const auto start = Clock::now();
  try {
    run_steps();
  } catch (...) {
    at::removeCallback(handle);
    active = nullptr;
    throw;
  }
  const double wall_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  at::removeCallback(handle);
  active = nullptr;

  OperatorProfile profile;
  const double per_step_ms = 1.0 / (1000.0 * static_cast<double>(steps));
  profile.wall_ms_per_step = wall_us * per_step_ms;
  profile.outside_ms_per_step = std::max(0.0, wall_us - recorder.outermost_us) * per_step_ms;
  for (const auto& [name, a] : recorder.by_name) {
    if (a.calls == 0) continue;
    profile.operators.push_back({name, a.self_us * per_step_ms, a.total_us * per_step_ms,
                                 static_cast<double>(a.calls) / static_cast<double>(steps)});
  }
  std::sort(profile.operators.begin(), profile.operators.end(),
            [](const OperatorTime& a, const OperatorTime& b) {
              return a.self_ms_per_step > b.self_ms_per_step;
            });
  return profile;
}
std::vector<std::string> format_operator_profile(const OperatorProfile& profile, std::size_t rows) {
  std::vector<std::string> lines;
  char line[256];
  std::snprintf(line, sizeof line, "  %8s  %6s  %8s  %7s  %s", "self ms", "share", "total ms",
                "calls", "operator (per step)");
  lines.emplace_back(line);
  const double wall = profile.wall_ms_per_step > 0 ? profile.wall_ms_per_step : 1.0;
  const auto add = [&](double self_ms, double total_ms, double calls, const std::string& name) {
    std::snprintf(line, sizeof line, "  %8.3f  %5.1f%%  %8.3f  %7.1f  %s", self_ms,
                  100.0 * self_ms / wall, total_ms, calls, name.c_str());
    lines.emplace_back(line);
  };
  for (std::size_t i = 0; i < std::min(rows, profile.operators.size()); ++i) {
    const OperatorTime& op = profile.operators[i];
    add(op.self_ms_per_step, op.total_ms_per_step, op.calls_per_step, op.name);
  }
  double rest_ms = 0, rest_calls = 0;
  for (std::size_t i = rows; i < profile.operators.size(); ++i) {
    rest_ms += profile.operators[i].self_ms_per_step;
    rest_calls += profile.operators[i].calls_per_step;
  }
  if (profile.operators.size() > rows) {
    // Appended, not "(" + to_string(...): GCC 12 warns falsely (-Wstringop-overflow) on that.
    std::string label = "(";
    label += std::to_string(profile.operators.size() - rows);
    label += " other operators)";
    add(rest_ms, rest_ms, rest_calls, label);
  }
  add(profile.outside_ms_per_step, profile.outside_ms_per_step, 0, "(outside any operator)");
  std::snprintf(line, sizeof line, "  %8.3f  100.0%%  wall time of a profiled step",
                profile.wall_ms_per_step);
  lines.emplace_back(line);
  return lines;
}

}  // namespace lpdt::exp
