#include "lpdt/core/interrupt_note.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>

namespace lpdt {
namespace {

// Two buffers, so that a note being replaced is never read half-written: the handler reads the
// one `current` points at, set after the other was filled.
constexpr std::size_t kNoteBytes = 4096;
// Ctrl-C, a scheduler's or kill's SIGTERM, a closed terminal or SSH session.
constexpr int kNotedSignals[] = {SIGINT, SIGTERM, SIGHUP};
char notes[2][kNoteBytes];
std::atomic<int> current{-1};  // -1: no note

extern "C" void on_interrupt(int signal_number) {
  const int which = current.load();
  if (which >= 0) {
    const char* text = notes[which];
    std::size_t left = std::strlen(text);
    while (left > 0) {
      const ssize_t written = ::write(STDERR_FILENO, text, left);
      if (written <= 0) break;
      text += written;
      left -= static_cast<std::size_t>(written);
    }
  }
  // End as the signal would have ended the process (exit status 128 + signal for the shell).
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

// A signal the process was started ignoring (SIGINT in a background job of a non-interactive
// shell, SIGHUP under nohup) stays ignored.
void handle_unless_ignored(int signal_number) {
  struct sigaction now {};
  if (::sigaction(signal_number, nullptr, &now) == 0 && now.sa_handler == SIG_IGN) return;
  std::signal(signal_number, on_interrupt);
}

void install_once() {
  static const bool installed = [] {
    for (const int signal_number : kNotedSignals) handle_unless_ignored(signal_number);
    return true;
  }();
  (void)installed;
}

}  // namespace

void set_interrupt_note(const std::string& text) {
  install_once();
  const int next = current.load() == 0 ? 1 : 0;
  const std::size_t n = std::min(text.size(), kNoteBytes - 2);
  std::memcpy(notes[next], text.data(), n);
  notes[next][n] = '\n';
  notes[next][n + 1] = '\0';
  current.store(next);
}

void clear_interrupt_note() { current.store(-1); }

}  // namespace lpdt
