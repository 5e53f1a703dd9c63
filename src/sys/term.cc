#include "sys/term.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "sys/clock.h"

namespace hone::sys {
namespace {

bool DebugEnabled() {
  static const bool enabled = [] {
    const char* v = getenv("HONE_LOG");
    return v && std::string(v) == "debug";
  }();
  return enabled;
}

void Emit(std::string_view level, std::string_view message) {
  std::string line = "hone: ";
  line += level;
  line += message;
  line += '\n';
  (void)!write(2, line.data(), line.size());
}

}  // namespace

bool StderrIsTty() { return isatty(2) == 1; }

void LogInfo(std::string_view message) { Emit("", message); }
void LogWarn(std::string_view message) { Emit("warning: ", message); }
void LogDebug(std::string_view message) {
  if (DebugEnabled()) Emit("debug: ", message);
}

Progress::Progress(std::string label)
    : label_(std::move(label)), tty_(StderrIsTty()), start_ns_(DefaultClock().MonoNanos()) {}

Progress::~Progress() {
  if (open_) std::fputs("\n", stderr);
}

void Progress::Update(double fraction, std::string_view detail) {
  int64_t now = DefaultClock().MonoNanos();
  double elapsed = static_cast<double>(now - start_ns_) * 1e-9;
  char head[64];
  if (fraction >= 0) {
    std::snprintf(head, sizeof head, "%3.0f%% ", fraction * 100.0);
  } else {
    head[0] = 0;
  }
  char tail[32];
  std::snprintf(tail, sizeof tail, " (%.0fs)", elapsed);
  std::string text = label_ + " " + head + std::string(detail) + tail;
  if (tty_) {
    if (text.size() > 118) text.resize(118);
    std::fprintf(stderr, "\r\033[K%s", text.c_str());
    std::fflush(stderr);
    open_ = true;
    return;
  }
  bool advanced = fraction >= 0 && fraction - last_fraction_ >= 0.10;
  bool stale = now - last_print_ns_ >= 15'000'000'000LL;
  if (advanced || stale || last_print_ns_ == 0) {
    std::fprintf(stderr, "hone: %s\n", text.c_str());
    last_fraction_ = fraction;
    last_print_ns_ = now;
  }
}

void Progress::Done(std::string_view message) {
  double elapsed = static_cast<double>(DefaultClock().MonoNanos() - start_ns_) * 1e-9;
  if (tty_ && open_) std::fputs("\r\033[K", stderr);
  std::fprintf(stderr, "hone: %s %.*s (%.1fs)\n", label_.c_str(), static_cast<int>(message.size()),
               message.data(), elapsed);
  open_ = false;
}

}  // namespace hone::sys
