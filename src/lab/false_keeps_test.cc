#include "lab/false_keeps.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hone::lab {
namespace {

// Symmetric residuals of +-2%: a quiet machine.
std::vector<double> Quiet() { return {-0.02, -0.01, 0.0, 0.01, 0.02}; }

TEST(FalseKeepsTest, IdenticalCandidatesAreRarelyKept) {
  FalseKeepOptions o;
  o.decisions = 200;
  FalseKeepResult r = MeasureKeeps(Quiet(), o);
  EXPECT_EQ(r.decisions, 200);
  EXPECT_EQ(r.keeps + r.screened_out + r.reverts + r.inconclusive, 200);
  EXPECT_LE(r.rate, 0.05);
  EXPECT_LE(r.lo, r.rate);
  EXPECT_GE(r.hi, r.rate);
}

TEST(FalseKeepsTest, AClearTrueGainIsKept) {
  FalseKeepOptions o;
  o.decisions = 100;
  o.effect = 0.20;
  FalseKeepResult r = MeasureKeeps(Quiet(), o);
  EXPECT_GE(r.rate, 0.95);
}

TEST(FalseKeepsTest, ResidualsComeFromRepeatedPointsOnly) {
  search::ResponseSurface s = search::ResponseSurface::Grid({{"k", {"a", "b"}}}, Config{{"k", "a"}});
  s.mutable_points()[0].samples = {90, 110};  // mean 100: -10%, +10%, corrected by sqrt(2)
  s.mutable_points()[1].samples = {50};       // measured once: no noise information
  std::vector<double> r = RecordedResiduals(s);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NEAR(r[0], -0.1 * std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(r[1], 0.1 * std::sqrt(2.0), 1e-12);
}

TEST(FalseKeepsTest, WilsonIntervalOfKnownCounts) {
  double lo = 0, hi = 0;
  WilsonInterval(0, 40, lo, hi);
  EXPECT_EQ(lo, 0);
  EXPECT_NEAR(hi, 0.0876, 1e-3);
  WilsonInterval(20, 40, lo, hi);
  EXPECT_NEAR(lo, 0.352, 1e-3);
  EXPECT_NEAR(hi, 0.648, 1e-3);
}

}  // namespace
}  // namespace hone::lab
