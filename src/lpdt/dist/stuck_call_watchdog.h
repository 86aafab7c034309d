#pragma once
// Ends the process when a call into the MPI library has not returned for too long.
//
// Why: every wait of a multi-process run polls with a deadline (run.receive_timeout_s), but the
// polls themselves are calls into Open MPI, and one of them can stop returning. Seen with the
// shared-memory transport (vader) when a peer is killed in the middle of a large message: rank 0
// spun inside MPI_Test for as long as it was let ("Read -1, expected 246960, errno = 3"), so
// lpdt's deadline, checked between polls, never ran, and the job hung instead of finding the
// dead rank. No MPI call of lpdt's blocks for long by design (they test, probe and cancel), so one
// that has not returned after the deadline and a grace period is stuck: the watchdog says which
// call, for how long, and ends the process (its last checkpoint is intact: a run resumes from it).
#include <atomic>
#include <cstdint>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace lpdt::dist {

// How long an MPI call may take before it counts as stuck: the run's deadline plus a grace for
// a slow transfer (a checkpoint's rows over a slow network).
constexpr double kStuckCallGraceSeconds = 30;
inline double stuck_call_limit_s(double receive_timeout_s) {
  return receive_timeout_s + kStuckCallGraceSeconds;
}

class StuckCallWatchdog {
 public:
  // on_stuck(call, seconds) runs once, on the watchdog's thread, when a call entered with
  // Scope has been running for `limit_s`; it is expected to end the process (std::_Exit).
  StuckCallWatchdog(double limit_s, std::function<void(const char* call, double seconds)> on_stuck);
  ~StuckCallWatchdog();
  StuckCallWatchdog(const StuckCallWatchdog&) = delete;
  StuckCallWatchdog& operator=(const StuckCallWatchdog&) = delete;

  // Marks one call, from its construction to its destruction (one call at a time: the thread
  // that calls MPI is the main thread, MPI_THREAD_FUNNELED).
  class Scope {
   public:
    Scope(StuckCallWatchdog* watchdog, const char* call);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    StuckCallWatchdog* watchdog_;
  };

 private:
  void watch();

  using Clock = std::chrono::steady_clock;
  const double limit_s_;
  const std::function<void(const char*, double)> on_stuck_;
  std::atomic<std::int64_t> entered_ns_{0};  // steady-clock time of the call in progress; 0: none
  std::atomic<const char*> call_{nullptr};
  std::mutex mutex_;
  std::condition_variable stop_signal_;
  bool stopping_ = false;
  bool fired_ = false;
  std::thread thread_;
};

// The process's watchdog of MPI calls (null where none runs: in-process runs, tests).
StuckCallWatchdog* mpi_call_watchdog();
void set_mpi_call_watchdog(StuckCallWatchdog* watchdog);

// `const WatchedMpiCall watched("MPI_Test");` before a call into MPI.
class WatchedMpiCall {
 public:
  explicit WatchedMpiCall(const char* call) : scope_(mpi_call_watchdog(), call) {}

 private:
  StuckCallWatchdog::Scope scope_;
};

}  // namespace lpdt::dist
