// Interrupt handling. InstallInterruptHandlers() makes SIGINT, SIGTERM and SIGHUP set
// a flag instead of killing hone, so that long operations can notice
// InterruptRequested(), stop their children and close the session cleanly. A second
// signal exits at once; child process groups are still reaped by their guards
// (sys/process.h), so nothing is orphaned either way. SIGPIPE is ignored.
// This is hone's one permitted global (a volatile sig_atomic_t).
#pragma once

namespace hone::sys {

void InstallInterruptHandlers();
bool InterruptRequested();
// The signal that set the flag (0 if none).
int InterruptSignal();
// For tests: clear the flag.
void ResetInterruptForTesting();

}  // namespace hone::sys
