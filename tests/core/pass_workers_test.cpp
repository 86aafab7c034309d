// PassWorkers: every task runs once, on worker threads of one intra-op thread each, with the
// caller's thread-local state, and a task's exception reaches the caller.
#include "lpdt/core/pass_workers.h"

#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace lpdt {
namespace {

TEST(PassWorkers, RunsEveryTaskOnceOnTheWorkers) {
  PassWorkers workers(2);
  for (const std::int64_t n : {1, 2, 7, 64}) {
    std::vector<std::atomic<int>> runs(static_cast<std::size_t>(n));
    std::mutex mutex;
    std::set<std::thread::id> threads;
    workers.run(n, [&](std::int64_t i) {
      runs[static_cast<std::size_t>(i)]++;
      const std::lock_guard<std::mutex> lock(mutex);
      threads.insert(std::this_thread::get_id());
    });
    for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(runs[static_cast<std::size_t>(i)], 1) << n;
    EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u) << "tasks run on the workers";
    EXPECT_LE(threads.size(), 2u);
  }
}

TEST(PassWorkers, EachWorkerRunsOneIntraOpThread) {
  const int before = at::get_num_threads();
  at::set_num_threads(2);
  PassWorkers workers(2);
  std::vector<int> seen(8, 0);
  workers.run(8, [&](std::int64_t i) {
    seen[static_cast<std::size_t>(i)] = at::get_num_threads();
    // A parallel loop inside a task runs on the task's thread alone.
    std::atomic<int> chunks{0};
    at::parallel_for(0, 1 << 16, 1, [&](std::int64_t, std::int64_t) { chunks++; });
    if (chunks != 1) seen[static_cast<std::size_t>(i)] = -chunks;
  });
  for (const int threads : seen) EXPECT_EQ(threads, 1);
  EXPECT_EQ(at::get_num_threads(), 2) << "the caller's threads are left as they were";
  at::set_num_threads(before);
}

TEST(PassWorkers, TasksSeeTheCallersGradMode) {
  PassWorkers workers(2);
  std::vector<int> enabled(4, -1);
  {
    const c10::AutoGradMode no_grad(false);
    workers.run(4, [&](std::int64_t i) {
      enabled[static_cast<std::size_t>(i)] = c10::GradMode::is_enabled() ? 1 : 0;
    });
  }
  for (const int e : enabled) EXPECT_EQ(e, 0);
  workers.run(4, [&](std::int64_t i) {
    enabled[static_cast<std::size_t>(i)] = c10::GradMode::is_enabled() ? 1 : 0;
  });
  for (const int e : enabled) EXPECT_EQ(e, 1);
}

TEST(PassWorkers, TheLowestFailingTasksExceptionReachesTheCaller) {
  PassWorkers workers(2);
  std::atomic<int> finished{0};
  try {
    workers.run(6, [&](std::int64_t i) {
      if (i == 4 || i == 2) throw std::runtime_error("task " + std::to_string(i));
      finished++;
    });
    FAIL() << "expected the task's exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "task 2");
  }
  EXPECT_EQ(finished, 4) << "the other tasks still ran";
  // The pool is usable after a failure.
  std::atomic<int> again{0};
  workers.run(3, [&](std::int64_t) { again++; });
  EXPECT_EQ(again, 3);
}

TEST(PassWorkers, RejectsNoWorkers) { EXPECT_ANY_THROW(PassWorkers(0)); }

// The threads a pool's tasks ran on.
std::set<std::thread::id> threads_of(PassWorkers& pool) {
  std::mutex mutex;
  std::set<std::thread::id> threads;
  pool.run(16, [&](std::int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const std::lock_guard<std::mutex> lock(mutex);
    threads.insert(std::this_thread::get_id());
  });
  return threads;
}

// The process's pools: one per count and per family of PassWorkerPoolScope, each kept; a scope
// selects its family on its own thread only, until it ends.
TEST(PassWorkers, ScopesSelectPoolsOfTheirOwn) {
  PassWorkers& plain = pass_workers(2);
  EXPECT_EQ(&pass_workers(2), &plain);
  PassWorkers* family_one = nullptr;
  {
    const PassWorkerPoolScope scope(1);
    family_one = &pass_workers(2);
    EXPECT_NE(family_one, &plain);
    EXPECT_EQ(&pass_workers(2), family_one);
    {
      const PassWorkerPoolScope inner(0);
      EXPECT_EQ(&pass_workers(2), &plain);
    }
    EXPECT_EQ(&pass_workers(2), family_one);
    // Another thread is outside the scope.
    PassWorkers* seen_elsewhere = nullptr;
    std::thread([&] { seen_elsewhere = &pass_workers(2); }).join();
    EXPECT_EQ(seen_elsewhere, &plain);
  }
  EXPECT_EQ(&pass_workers(2), &plain);
  {
    const PassWorkerPoolScope again(1);
    EXPECT_EQ(&pass_workers(2), family_one);
  }
  // No thread is shared between the two pools.
  const std::set<std::thread::id> a = threads_of(plain), b = threads_of(*family_one);
  for (const std::thread::id& id : a) EXPECT_EQ(b.count(id), 0u);
}

}  // namespace
}  // namespace lpdt
