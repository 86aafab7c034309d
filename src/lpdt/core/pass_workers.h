#pragma once
// Worker threads that run a step's independent forward/backward passes side by side on the CPU.
//
// Why threads of our own, not an OpenMP team: each worker runs one intra-op thread, so every
// oneDNN primitive a pass creates there is made for one thread (oneDNN keys its primitive cache by
// the thread count). Inside an OpenMP team, LibTorch's convolutions were handed primitives made
// for the team's two threads and ran them on one, and kernels that meet at a barrier for two
// threads waited forever (docs/benchmarks.md, training throughput item 11). A worker is not in a
// team: a primitive made for more threads still runs, on a parallel region of its own.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lpdt {

class PassWorkers {
 public:
  // `count` >= 1 threads, started at once; each runs at one intra-op thread.
  explicit PassWorkers(int count);
  ~PassWorkers();
  PassWorkers(const PassWorkers&) = delete;
  PassWorkers& operator=(const PassWorkers&) = delete;

  int size() const { return static_cast<int>(threads_.size()); }

  // Runs task(i) once for every i in [0, n) on the workers, in any order, and returns when all
  // have finished. The caller's thread-local state (grad mode, a profiler) is what each task sees.
  // If tasks throw, the exception of the lowest i is rethrown here after all have finished.
  // One run at a time per pool (calls from several threads at once are serialised).
  void run(std::int64_t n, const std::function<void(std::int64_t)>& task);

 private:
  void work();

  std::vector<std::thread> threads_;
  std::mutex run_mutex_;  // one run at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(std::int64_t)>* task_ = nullptr;
  const void* caller_state_ = nullptr;  // at::ThreadLocalState of the caller (kept out of here)
  std::int64_t tasks_ = 0, next_ = 0, finished_ = 0;
  std::uint64_t generation_ = 0;
  bool stopping_ = false;
  std::vector<std::exception_ptr> errors_;
};

// The process's pool of `count` workers, made on first use and kept for the process's life; a
// pool per (count, the calling thread's current PassWorkerPoolScope).
PassWorkers& pass_workers(int count);

// While one lives, `pass_workers` called on this thread returns the pools of `family` (0 outside
// any scope). For work in one process that must not share workers: a worker's thread-local state
// (its malloc arena, the oneDNN primitives it made) then holds one kind of work, as in a training
// run. `lpdt bench --precision` gives each mode its own family: fp32 steps alternating with
// int8-integer steps on shared workers ran 1.3-2.1x slower than alone (docs/benchmarks.md).
// The family of evaluation's workers (exp/evaluation.h): a test batch of 500 through one node's
// forward pass is other work than a training pass, and training's workers keep theirs.
constexpr int kEvaluationPoolFamily = -1;

class PassWorkerPoolScope {
 public:
  explicit PassWorkerPoolScope(int family);
  ~PassWorkerPoolScope();
  PassWorkerPoolScope(const PassWorkerPoolScope&) = delete;
  PassWorkerPoolScope& operator=(const PassWorkerPoolScope&) = delete;

 private:
  int previous_;
};

}  // namespace lpdt
