#pragma once
// Progress of a long run: a bar with the estimated time left, redrawn in place on a terminal, and
// the same estimate in the periodic log lines when the output is a file or a pipe.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace lpdt::exp {

// "42s", "3m05s", "2h07m"; "?" for a negative or non-finite estimate.
std::string format_duration(double seconds);

// What the bar shows; done and total count training steps of the whole run.
struct ProgressState {
  std::int64_t done = 0;
  std::int64_t total = 0;
  int epoch = 0;  // the epoch being trained, 1-based
  int epochs = 0;
  double eta_s = -1;  // < 0: not known yet
};

// "[#########...........]  45%  epoch 3/15  step 1234/2700  ETA 1m23s", `width` characters of bar.
std::string progress_bar_line(const ProgressState& state, int width);

class ProgressMeter {
 public:
  // total_steps: the run's steps; done_before: steps already done (a resumed run), not counted in
  // the rate. terminal: draw the bar on `out` (stderr) in place; otherwise draw nothing.
  ProgressMeter(std::int64_t total_steps, std::int64_t done_before, int epochs, bool terminal,
                std::FILE* out = stderr);

  // After each step: `done` steps of the run finished, in `epoch` (1-based). Redraws the bar at
  // most every 0.2 s.
  void update(std::int64_t done, int epoch);
  // Seconds left at the rate since this meter started; < 0 until a step has been timed.
  double eta_s() const;
  // Erases the bar, so that a log line can be printed on a clean line (the next update redraws).
  void clear();
  // Erases the bar for good.
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  std::int64_t total_;
  std::int64_t done_before_;
  std::int64_t done_;
  int epochs_;
  int epoch_ = 0;
  bool terminal_;
  std::FILE* out_;
  Clock::time_point start_;
  Clock::time_point last_draw_;
  bool drawn_ = false;
};

}  // namespace lpdt::exp
