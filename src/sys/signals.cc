#include "sys/signals.h"

#include <csignal>
#include <unistd.h>

namespace hone::sys {
namespace {

volatile sig_atomic_t g_interrupt_signal = 0;

void OnSignal(int sig) {
  if (g_interrupt_signal != 0) {
    // Second signal: the user insists. Guards kill our children's groups.
    _exit(128 + sig);
  }
  g_interrupt_signal = sig;
}

}  // namespace

void InstallInterruptHandlers() {
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: blocking calls return EINTR and re-check the flag
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // A file-size limit (ulimit -f) makes a write fail with EFBIG, reported like a full
  // disk, instead of killing hone mid-write.
  signal(SIGXFSZ, SIG_IGN);
}

bool InterruptRequested() { return g_interrupt_signal != 0; }
int InterruptSignal() { return g_interrupt_signal; }
void ResetInterruptForTesting() { g_interrupt_signal = 0; }

}  // namespace hone::sys
