// Terminal output: logging lines to stderr and a progress display for long work.
//
// Progress redraws one line in place on a TTY ("\r" + erase) and, when stderr is not a
// TTY (CI logs, pipes), prints a plain line only when the work advanced by at least
// 10% or 15 s passed, so logs stay readable. Not thread-safe: one owner per display.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hone::sys {

bool StderrIsTty();

// "hone: <message>" lines on stderr. Debug lines only when HONE_LOG=debug.
void LogInfo(std::string_view message);
void LogWarn(std::string_view message);
void LogDebug(std::string_view message);

class Progress {
 public:
  explicit Progress(std::string label);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // fraction in [0,1], or negative when unknown; detail is a short suffix.
  void Update(double fraction, std::string_view detail);
  // Finishes the line with a final message.
  void Done(std::string_view message);

 private:
  std::string label_;
  bool tty_;
  bool open_ = false;  // a TTY line is drawn and not yet terminated
  double last_fraction_ = -1;
  int64_t last_print_ns_ = 0;
  int64_t start_ns_ = 0;
};

}  // namespace hone::sys
