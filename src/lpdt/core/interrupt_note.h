#pragma once
// What a process says when it is interrupted (Ctrl-C: SIGINT; SIGTERM from a job scheduler)
// before it ends as the signal would end it. A training run sets the note once its folder exists
// ("the run folder keeps its last checkpoint: lpdt train --resume DIR"); until then, and after
// clear_interrupt_note(), the signal ends the process without a word, as by default.
#include <string>

namespace lpdt {

// Installs the handlers (once) and sets the text written to stderr on SIGINT or SIGTERM. Not
// thread-safe against a concurrent call; the handler itself only reads a buffer set beforehand
// and calls async-signal-safe functions (write, signal, raise).
void set_interrupt_note(const std::string& text);

// No note: the signals end the process silently again.
void clear_interrupt_note();

}  // namespace lpdt
