// Clock: the time seam. Everything above sys/ reads time through a Clock so that tests
// can drive it with FakeClock (src/testing/fake_clock.h). Monotonic time is for
// durations and deadlines; wall time is only for timestamps shown to people.
// RealClock is thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace hone::sys {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic nanoseconds since an arbitrary origin.
  virtual int64_t MonoNanos() = 0;
  // Microseconds since the Unix epoch.
  virtual int64_t WallMicros() = 0;
  virtual void SleepFor(std::chrono::nanoseconds d) = 0;

  double MonoSeconds() { return static_cast<double>(MonoNanos()) * 1e-9; }
};

class RealClock final : public Clock {
 public:
  int64_t MonoNanos() override;
  int64_t WallMicros() override;
  void SleepFor(std::chrono::nanoseconds d) override;
};

// The process-wide real clock (stateless, so sharing it is safe).
Clock& DefaultClock();

// "2026-12-02T14:56:32Z" for a wall time in microseconds.
std::string FormatUtc(int64_t wall_micros);

}  // namespace hone::sys
