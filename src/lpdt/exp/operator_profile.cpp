#include "lpdt/exp/operator_profile.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
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

// One observed thread's state. An observer of LibTorch's RecordFunction ranges, not its
// profiler: the legacy profiler made every 2 MiB allocation about 0.3 ms slower on Debian's
// LibTorch 1.13 (an add of two [32, 16, 32, 32] tensors 0.08 -> 0.42 ms), which distorted the
// very operators a ResNet-20 profile is read for; this observer costs a clock read per range.
struct Recorder {
  std::unordered_map<std::string, Accumulated> by_name;
  std::vector<OpenCall> open;
  double outermost_us = 0;  // time inside operators that no other operator called
};

// A profile in progress: a recorder per observed thread, the calling thread's first. The
// callback is thread-local, so only the calling thread and the threads that take its
// thread-local state (pass workers) call it; each makes its recorder on its first range.
struct Session {
  std::uint64_t id = 0;
  std::mutex mutex;  // guards recorders
  std::vector<std::unique_ptr<Recorder>> recorders;
};

std::mutex session_mutex;  // guards `session` being set and cleared
std::atomic<Session*> session{nullptr};
std::atomic<std::uint64_t> last_session_id{0};

// This thread's recorder of the session with this id (recorders are not reused across sessions).
thread_local Recorder* active = nullptr;
thread_local std::uint64_t active_session = 0;

Recorder* this_threads_recorder() {
  Session* s = session.load(std::memory_order_acquire);
  if (s == nullptr) return nullptr;
  if (active_session != s->id) {
    const std::lock_guard<std::mutex> lock(s->mutex);
    s->recorders.push_back(std::make_unique<Recorder>());
    active = s->recorders.back().get();
    active_session = s->id;
  }
  return active;
}

struct CallContext : at::ObserverContext {};

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  Recorder* r = this_threads_recorder();
  if (r == nullptr) return nullptr;
  Accumulated& op = r->by_name[fn.name()];
  ++op.open;
  r->open.push_back({&op, Clock::now()});
  return std::make_unique<CallContext>();
}

void on_exit(const at::RecordFunction& /*fn*/, at::ObserverContext* context) {
  Recorder* r = context == nullptr ? nullptr : this_threads_recorder();
  if (r == nullptr || r->open.empty()) return;
  const OpenCall call = r->open.back();
  r->open.pop_back();
  const double inclusive_us =
      std::chrono::duration<double, std::micro>(Clock::now() - call.start).count();
  call.op->self_us += inclusive_us - call.children_us;
  if (--call.op->open == 0) call.op->total_us += inclusive_us;
  ++call.op->calls;
  if (r->open.empty()) {
    r->outermost_us += inclusive_us;
  } else {
    r->open.back().children_us += inclusive_us;
  }
}

// The session of one profile_operators call: started by the constructor (a UserError where one
// is running), ended on every path out. The callback is removed first, so no thread enters a
// recorder after the session is gone (the pass workers have finished their tasks, and closed
// their ranges, before the run that used them returns).
class SessionGuard {
 public:
  SessionGuard() {
    const std::lock_guard<std::mutex> lock(session_mutex);
    if (session.load() != nullptr) {
      throw UserError("profile: operators are already being profiled (one profile at a time)");
    }
    auto owned = std::make_unique<Session>();
    owned->id = ++last_session_id;
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(on_enter, on_exit).needsInputs(false));
    session.store(owned.release(), std::memory_order_release);
  }
  SessionGuard(const SessionGuard&) = delete;
  SessionGuard& operator=(const SessionGuard&) = delete;
  ~SessionGuard() {
    at::removeCallback(handle_);
    const std::lock_guard<std::mutex> lock(session_mutex);
    delete session.exchange(nullptr, std::memory_order_acq_rel);
  }
  // The recorders of every thread observed so far, the caller's first.
  std::vector<std::unique_ptr<Recorder>> take_recorders() {
    Session* s = session.load(std::memory_order_acquire);
    const std::lock_guard<std::mutex> lock(s->mutex);
    return std::move(s->recorders);
  }

 private:
  at::CallbackHandle handle_ = 0;
};

}  // namespace

OperatorProfile profile_operators(const std::function<void()>& run_steps, std::int64_t steps) {
  if (steps < 1) throw UserError("profile: the number of profiled steps must be positive");
  Recorder* caller = nullptr;
  double wall_us = 0;
  std::vector<std::unique_ptr<Recorder>> recorders;
  {
    SessionGuard guard;
    caller = this_threads_recorder();  // the calling thread's recorder first
    const auto start = Clock::now();
    run_steps();
    wall_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    recorders = guard.take_recorders();
  }

  OperatorProfile profile;
  const double per_step_ms = 1.0 / (1000.0 * static_cast<double>(steps));
  profile.wall_ms_per_step = wall_us * per_step_ms;
  profile.outside_ms_per_step = std::max(0.0, wall_us - caller->outermost_us) * per_step_ms;
  profile.threads = static_cast<int>(recorders.size());
  std::unordered_map<std::string, Accumulated> by_name;
  for (const auto& recorder : recorders) {
    for (const auto& [name, a] : recorder->by_name) {
      Accumulated& sum = by_name[name];
      sum.self_us += a.self_us;
      sum.total_us += a.total_us;
      sum.calls += a.calls;
    }
  }
  profile.thread_ms_per_step = profile.outside_ms_per_step;
  for (const auto& [name, a] : by_name) {
    if (a.calls == 0) continue;
    profile.operators.push_back({name, a.self_us * per_step_ms, a.total_us * per_step_ms,
                                 static_cast<double>(a.calls) / static_cast<double>(steps)});
    profile.thread_ms_per_step += a.self_us * per_step_ms;
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
  // Shares of the wall time with one thread observed, of the threads' time with several.
  const double whole = profile.threads > 1 ? profile.thread_ms_per_step : profile.wall_ms_per_step;
  const double wall = whole > 0 ? whole : 1.0;
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
  add(profile.outside_ms_per_step, profile.outside_ms_per_step, 0,
      profile.threads > 1 ? "(outside any operator on the calling thread, its waits included)"
                          : "(outside any operator)");
  if (profile.threads > 1) {
    std::snprintf(line, sizeof line,
                  "  %8.3f  100.0%%  time of the %d threads observed (the calling thread and its "
                  "pass workers) per step",
                  profile.thread_ms_per_step, profile.threads);
    lines.emplace_back(line);
  }
  std::snprintf(line, sizeof line, "  %8.3f  %s  wall time of a profiled step",
                profile.wall_ms_per_step, profile.threads > 1 ? "      " : "100.0%");
  lines.emplace_back(line);
  return lines;
}

}  // namespace lpdt::exp
