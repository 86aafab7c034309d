#include "lpdt/core/pass_workers.h"

#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>
#include <omp.h>

#include <map>
#include <utility>

#include "lpdt/core/error.h"

namespace lpdt {

PassWorkers::PassWorkers(int count) {
  LPDT_CHECK(count >= 1, "PassWorkers: count must be >= 1, got " + std::to_string(count));
  threads_.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) threads_.emplace_back([this] { work(); });
}

PassWorkers::~PassWorkers() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void PassWorkers::run(std::int64_t n, const std::function<void(std::int64_t)>& task) {
  if (n <= 0) return;
  const std::lock_guard<std::mutex> one_run(run_mutex_);
  const at::ThreadLocalState caller_state;
  std::unique_lock<std::mutex> lock(mutex_);
  task_ = &task;
  caller_state_ = &caller_state;
  tasks_ = n;
  next_ = 0;
  finished_ = 0;
  errors_.assign(static_cast<std::size_t>(n), nullptr);
  ++generation_;
  wake_.notify_all();
  done_.wait(lock, [&] { return finished_ == tasks_; });
  task_ = nullptr;
  caller_state_ = nullptr;
  for (const std::exception_ptr& error : errors_) {
    if (error) std::rethrow_exception(error);
  }
}

void PassWorkers::work() {
  // ATen sets a thread's OpenMP thread count from the process-wide one the first time the thread
  // runs a parallel loop; done first here, so that the one-thread setting after it stays.
  at::internal::lazy_init_num_threads();
  omp_set_num_threads(1);
  std::uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || (generation_ != seen && next_ < tasks_); });
    if (stopping_) return;
    const std::uint64_t generation = generation_;
    while (next_ < tasks_) {
      const std::int64_t i = next_++;
      const std::function<void(std::int64_t)>& task = *task_;
      const auto* state = static_cast<const at::ThreadLocalState*>(caller_state_);
      lock.unlock();
      std::exception_ptr error;
      try {
        const at::ThreadLocalStateGuard guard(*state);
        task(i);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      errors_[static_cast<std::size_t>(i)] = error;
      if (++finished_ == tasks_) done_.notify_all();
    }
    seen = generation;
  }
}

namespace {
thread_local int current_pool_family = 0;
}  // namespace

PassWorkerPoolScope::PassWorkerPoolScope(int family) : previous_(current_pool_family) {
  current_pool_family = family;
}

PassWorkerPoolScope::~PassWorkerPoolScope() { current_pool_family = previous_; }

PassWorkers& pass_workers(int count) {
  static std::mutex mutex;
  // A pool per count and family, made once and kept: a worker's thread-local state (the integer
  // backend's oneDNN primitives, timed when made) would be made again by a new pool's threads.
  // Never destroyed: joining the workers at exit would run their thread-local destructors after
  // oneDNN's own statics are gone. Blocked in their wait, they end with the process.
  static std::map<std::pair<int, int>, PassWorkers*> pools;
  const std::lock_guard<std::mutex> lock(mutex);
  PassWorkers*& pool = pools[{count, current_pool_family}];
  if (pool == nullptr) pool = new PassWorkers(count);
  return *pool;
}

}  // namespace lpdt
