#include "sys/clock.h"

#include <ctime>
#include <thread>

namespace hone::sys {

int64_t RealClock::MonoNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int64_t RealClock::WallMicros() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}

void RealClock::SleepFor(std::chrono::nanoseconds d) {
  if (d.count() > 0) std::this_thread::sleep_for(d);
}

Clock& DefaultClock() {
  static RealClock clock;
  return clock;
}

std::string FormatUtc(int64_t wall_micros) {
  time_t secs = static_cast<time_t>(wall_micros / 1'000'000);
  tm utc;
  gmtime_r(&secs, &utc);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

}  // namespace hone::sys
