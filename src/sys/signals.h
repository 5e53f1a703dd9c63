// Interrupt handling. InstallInterruptHandlers() makes SIGINT, SIGTERM and SIGHUP set
// a flag instead of killing hone, so that long operations can notice
// InterruptRequested(), stop their children and close the session cleanly. A second
// signal exits at once; child process groups are still reaped by their guards
// (sys/process.h), so nothing is orphaned either way. SIGPIPE is ignored.
//
// A session's budget is hard the same way: SetStopDeadline() arms a wall-clock time
// after which InterruptRequested() is true too, so a benchmark, a server's start-up or
// a child command in flight at the deadline stops there, as it would on Ctrl-C, and the
// session closes with its report instead of overrunning by a trial. InterruptSignal()
// is 0 for such a stop; DeadlinePassed() names it.
// These are hone's permitted globals (a volatile sig_atomic_t and an atomic deadline).
#pragma once

namespace hone::sys {

void InstallInterruptHandlers();
// A signal arrived, or the stop deadline passed.
bool InterruptRequested();
// The signal that set the flag (0 if none).
int InterruptSignal();
// For tests: clear the flag.
void ResetInterruptForTesting();

// Arms the stop deadline at `unix_s` (seconds since the epoch, CLOCK_REALTIME); 0
// disarms it.
void SetStopDeadline(double unix_s);
// Whether an armed stop deadline has passed.
bool DeadlinePassed();
// Arms a stop deadline for a scope and disarms it on exit.
class ScopedStopDeadline {
 public:
  explicit ScopedStopDeadline(double unix_s) { SetStopDeadline(unix_s); }
  ~ScopedStopDeadline() { SetStopDeadline(0); }
  ScopedStopDeadline(const ScopedStopDeadline&) = delete;
  ScopedStopDeadline& operator=(const ScopedStopDeadline&) = delete;
};

}  // namespace hone::sys
