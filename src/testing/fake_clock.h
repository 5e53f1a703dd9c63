// FakeClock: a Clock tests advance by hand (sys/clock.h's seam). SleepFor advances
// the clock instead of sleeping, so timing-dependent logic runs instantly.
#pragma once

#include "sys/clock.h"

namespace hone::testing {

class FakeClock final : public sys::Clock {
 public:
  explicit FakeClock(int64_t wall_us = 1'800'000'000'000'000) : wall_us_(wall_us) {}
  int64_t MonoNanos() override { return mono_ns_; }
  int64_t WallMicros() override { return wall_us_; }
  void SleepFor(std::chrono::nanoseconds d) override { Advance(d); }
  void Advance(std::chrono::nanoseconds d) {
    mono_ns_ += d.count();
    wall_us_ += d.count() / 1000;
  }
  void AdvanceSeconds(double s) { Advance(std::chrono::nanoseconds(static_cast<int64_t>(s * 1e9))); }

 private:
  int64_t mono_ns_ = 1'000'000'000;
  int64_t wall_us_;
};

}  // namespace hone::testing
