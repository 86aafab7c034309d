#include "lpdt/dist/stuck_call_watchdog.h"

#include <algorithm>
#include <cstdint>

namespace lpdt::dist {
namespace {

std::atomic<StuckCallWatchdog*> the_mpi_call_watchdog{nullptr};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

StuckCallWatchdog::StuckCallWatchdog(double limit_s,
                                     std::function<void(const char*, double)> on_stuck)
    : limit_s_(limit_s), on_stuck_(std::move(on_stuck)), thread_([this] { watch(); }) {}

StuckCallWatchdog::~StuckCallWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_signal_.notify_all();
  thread_.join();
}

StuckCallWatchdog::Scope::Scope(StuckCallWatchdog* watchdog, const char* call)
    : watchdog_(watchdog) {
  if (watchdog_ == nullptr) return;
  watchdog_->call_.store(call, std::memory_order_relaxed);
  watchdog_->entered_ns_.store(std::max<std::int64_t>(now_ns(), 1), std::memory_order_release);
}

StuckCallWatchdog::Scope::~Scope() {
  if (watchdog_ != nullptr) watchdog_->entered_ns_.store(0, std::memory_order_release);
}

void StuckCallWatchdog::watch() {
  // Polls a few times per limit (at most every second): a stuck call is reported within a
  // quarter of the limit after it passes.
  const auto poll = std::chrono::duration<double>(std::min(1.0, limit_s_ / 4));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    stop_signal_.wait_for(lock, poll, [&] { return stopping_; });
    if (stopping_ || fired_) continue;
    const std::int64_t entered = entered_ns_.load(std::memory_order_acquire);
    if (entered == 0) continue;
    const double seconds = static_cast<double>(now_ns() - entered) / 1e9;
    if (seconds < limit_s_) continue;
    fired_ = true;
    const char* call = call_.load(std::memory_order_relaxed);
    lock.unlock();
    on_stuck_(call != nullptr ? call : "an MPI call", seconds);
    lock.lock();
  }
}

StuckCallWatchdog* mpi_call_watchdog() {
  return the_mpi_call_watchdog.load(std::memory_order_acquire);
}

void set_mpi_call_watchdog(StuckCallWatchdog* watchdog) {
  the_mpi_call_watchdog.store(watchdog, std::memory_order_release);
}

}  // namespace lpdt::dist
