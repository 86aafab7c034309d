#include "lpdt/exp/progress_meter.h"

#include <algorithm>
#include <cmath>

namespace lpdt::exp {
namespace {

constexpr double kRedrawInterval_s = 0.2;
constexpr int kBarWidth = 30;

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long long s = std::llround(seconds);
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  }
  return buf;
}

std::string progress_bar_line(const ProgressState& state, int width) {
  const double fraction =
      state.total > 0 ? std::clamp(static_cast<double>(state.done) / static_cast<double>(state.total), 0.0, 1.0)
                      : 0.0;
  const std::size_t bar_width = static_cast<std::size_t>(std::max(width, 1));
  const std::size_t filled = std::min(bar_width, static_cast<std::size_t>(fraction * bar_width));
  std::string bar = "[";
  bar.append(filled, '#');
  bar.append(bar_width - filled, '.');
  bar += "]";
  char tail[160];
  // Steps of the whole run (the log lines count an epoch's): said so, not "step".
  std::snprintf(tail, sizeof tail, " %3d%%  epoch %d/%d  run step %lld/%lld  ETA %s",
                static_cast<int>(fraction * 100), state.epoch, state.epochs,
                static_cast<long long>(state.done), static_cast<long long>(state.total),
                format_duration(state.eta_s).c_str());
  return bar + tail;
}

ProgressMeter::ProgressMeter(std::int64_t total_steps, std::int64_t done_before, int epochs,
                             bool terminal, std::FILE* out)
    : total_(total_steps),
      done_before_(done_before),
      done_(done_before),
      epochs_(epochs),
      terminal_(terminal),
      out_(out),
      start_(Clock::now()),
      last_draw_(Clock::time_point::min()) {}

double ProgressMeter::eta_s() const {
  const std::int64_t timed = done_ - done_before_;
  if (timed <= 0) return -1;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  return elapsed / static_cast<double>(timed) * static_cast<double>(std::max<std::int64_t>(0, total_ - done_));
}

void ProgressMeter::update(std::int64_t done, int epoch) {
  done_ = done;
  epoch_ = epoch;
  if (!terminal_) return;
  const auto now = Clock::now();
  if (drawn_ && std::chrono::duration<double>(now - last_draw_).count() < kRedrawInterval_s &&
      done_ < total_) {
    return;
  }
  last_draw_ = now;
  const std::string line =
      progress_bar_line(ProgressState{done_, total_, epoch_, epochs_, eta_s()}, kBarWidth);
  std::fprintf(out_, "\r%s\033[K", line.c_str());  // \033[K: erase the rest of the line
  std::fflush(out_);
  drawn_ = true;
}

void ProgressMeter::clear() {
  if (!terminal_ || !drawn_) return;
  std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  drawn_ = false;
}

void ProgressMeter::finish() { clear(); }

}  // namespace lpdt::exp
