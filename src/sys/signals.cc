#include "sys/signals.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdint>

#include "sys/clock.h"

namespace hone::sys {
namespace {

volatile sig_atomic_t g_interrupt_signal = 0;
std::atomic<int64_t> g_stop_deadline_us{0};  // 0: none

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

bool InterruptRequested() { return g_interrupt_signal != 0 || DeadlinePassed(); }

void SetStopDeadline(double unix_s) {
  g_stop_deadline_us.store(unix_s > 0 ? static_cast<int64_t>(unix_s * 1e6) : 0, std::memory_order_relaxed);
}

bool DeadlinePassed() {
  const int64_t d = g_stop_deadline_us.load(std::memory_order_relaxed);
  return d > 0 && DefaultClock().WallMicros() >= d;
}
int InterruptSignal() { return g_interrupt_signal; }
void ResetInterruptForTesting() { g_interrupt_signal = 0; }

}  // namespace hone::sys
