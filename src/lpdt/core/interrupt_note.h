#pragma once
// What a process says when it is interrupted (Ctrl-C: SIGINT; SIGTERM from a job scheduler or
// kill; SIGHUP when its terminal or SSH session closes) before it ends as the signal would end
// it. A training run sets the note as it starts ("nothing was written"), then once its folder
// exists ("the run folder keeps its last checkpoint: lpdt train --resume DIR"); after
// clear_interrupt_note() the signal ends the process without a word, as by default. A signal the
// process was started ignoring (nohup, a background job) stays ignored.
#include <string>

namespace lpdt {

// Installs the handlers (once) and sets the text written to stderr on SIGINT, SIGTERM or SIGHUP. Not
// thread-safe against a concurrent call; the handler itself only reads a buffer set beforehand
// and calls async-signal-safe functions (write, signal, raise).
void set_interrupt_note(const std::string& text);

// No note: the signals end the process silently again.
void clear_interrupt_note();

}  // namespace lpdt
