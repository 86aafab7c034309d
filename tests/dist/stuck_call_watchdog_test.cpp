// The watchdog of MPI calls (dist/stuck_call_watchdog.h) without MPI: a call held past the limit
// is reported once, with its name and how long it had run; short calls and no call are not.
#include "lpdt/dist/stuck_call_watchdog.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace lpdt::dist {
namespace {

struct Reports {
  std::mutex mutex;
  std::vector<std::pair<std::string, double>> calls;
  void add(const char* call, double seconds) {
    std::lock_guard<std::mutex> lock(mutex);
    calls.emplace_back(call, seconds);
  }
  std::size_t size() {
    std::lock_guard<std::mutex> lock(mutex);
    return calls.size();
  }
};

TEST(StuckCallWatchdog, ReportsACallHeldPastTheLimitOnce) {
  Reports reports;
  StuckCallWatchdog watchdog(0.2, [&](const char* call, double s) { reports.add(call, s); });
  {
    const StuckCallWatchdog::Scope scope(&watchdog, "MPI_Test");
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
  }
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports.calls[0].first, "MPI_Test");
  EXPECT_GE(reports.calls[0].second, 0.2);
  EXPECT_LT(reports.calls[0].second, 0.7);
}

TEST(StuckCallWatchdog, ShortCallsAndNoCallAreNotReported) {
  Reports reports;
  StuckCallWatchdog watchdog(0.5, [&](const char* call, double s) { reports.add(call, s); });
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(600);
  while (std::chrono::steady_clock::now() < until) {
    const StuckCallWatchdog::Scope scope(&watchdog, "MPI_Testall");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // outside any call
  EXPECT_EQ(reports.size(), 0u);
}

TEST(StuckCallWatchdog, WatchedMpiCallUsesTheProcesssWatchdogWhereOneIsSet) {
  {
    const WatchedMpiCall unwatched("MPI_Test");  // none set: nothing to do, nothing to fail
  }
  Reports reports;
  StuckCallWatchdog watchdog(0.1, [&](const char* call, double s) { reports.add(call, s); });
  set_mpi_call_watchdog(&watchdog);
  {
    const WatchedMpiCall watched("MPI_Improbe");
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  set_mpi_call_watchdog(nullptr);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports.calls[0].first, "MPI_Improbe");
  EXPECT_DOUBLE_EQ(stuck_call_limit_s(3), 3 + kStuckCallGraceSeconds);
}

}  // namespace
}  // namespace lpdt::dist
