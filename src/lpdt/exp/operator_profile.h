#pragma once
// Where a training step's time goes, operator by operator (`lpdt bench --precision --profile K`).
//
// An observer of LibTorch's RecordFunction ranges times every ATen operator, every autograd node of
// the backward pass and every project kernel that opens a `RECORD_FUNCTION` range, on the thread
// that runs the step and on the pass workers it hands passes to (core/pass_workers.h: they take
// the caller's thread-local state, the observer with it). The intra-op threads a kernel
// parallelises over are inside their caller's range. An operator's self time is its time less
// that of the operators it called, on its own thread. With one thread observed, the self times of
// all rows plus the time outside any operator add up to the profiled steps' wall time; with pass
// workers they add up to the threads' time, more than the wall time (the calling thread's wait
// for its workers is in its time outside any operator).
// Observing costs a clock read and a hash lookup per range, so profiled steps are run after the
// timed ones and their wall time is reported beside the unprofiled median.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lpdt::exp {

struct OperatorTime {
  std::string name;  // the operator ("aten::add_"), autograd node ("EvoNormS0Function") or kernel
  double self_ms_per_step = 0;  // its own time, less the operators it called
  double total_ms_per_step =
      0;  // with them (outermost calls only, so recursion is not counted twice)
  double calls_per_step = 0;
};

struct OperatorProfile {
  std::vector<OperatorTime> operators;  // by self time, longest first
  double wall_ms_per_step = 0;          // of the profiled steps
  double outside_ms_per_step = 0;       // the calling thread's time in no operator (the project's
                                        // own glue code, and its waits for pass workers)
  int threads = 1;                      // threads whose operators were observed
  double thread_ms_per_step = 0;        // the self times plus outside_ms_per_step: the wall time
                                        // with one thread, the threads' time with several
};

// Runs `run_steps` (which runs `steps` training steps) under the profiler and returns the time per
// step of every operator it ran, on this thread and on the pass workers it used. Throws UserError
// where a profile is already running (one at a time in a process).
OperatorProfile profile_operators(const std::function<void()>& run_steps, std::int64_t steps);

// The first `rows` operators of `profile` as text lines, each with its share of the wall time.
std::vector<std::string> format_operator_profile(const OperatorProfile& profile, std::size_t rows);

}  // namespace lpdt::exp
