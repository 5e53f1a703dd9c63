#include "sys/signals.h"

#include <gtest/gtest.h>

#include "sys/clock.h"

namespace hone::sys {
namespace {

double NowUnix() { return static_cast<double>(DefaultClock().WallMicros()) * 1e-6; }

// The stop deadline makes InterruptRequested() true once it passes, without a signal,
// and only for the scope that armed it.
TEST(SignalsTest, AStopDeadlineStopsLikeAnInterruptOnceItPasses) {
  ResetInterruptForTesting();
  EXPECT_FALSE(DeadlinePassed());
  {
    ScopedStopDeadline ahead(NowUnix() + 3600);
    EXPECT_FALSE(DeadlinePassed());
    EXPECT_FALSE(InterruptRequested());
  }
  {
    ScopedStopDeadline passed(NowUnix() - 1);
    EXPECT_TRUE(DeadlinePassed());
    EXPECT_TRUE(InterruptRequested());
    EXPECT_EQ(InterruptSignal(), 0) << "no signal: the deadline";
  }
  EXPECT_FALSE(DeadlinePassed());
  EXPECT_FALSE(InterruptRequested());
}

}  // namespace
}  // namespace hone::sys
