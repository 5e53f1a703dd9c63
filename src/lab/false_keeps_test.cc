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

// Every compared pair's ratio is kept, so a known effect can be read back from them.
TEST(FalseKeepsTest, ThePooledPairsEstimateTheTrueEffect) {
  FalseKeepOptions o;
  o.decisions = 50;
  o.effect = 0.08;
  FalseKeepResult r = MeasureKeeps(Quiet(), o);
  ASSERT_GE(r.pair_ratios.size(), 150u);  // at least min_pairs per decision that was compared
  EffectEstimate e = PairedEffect(r.pair_ratios);
  EXPECT_EQ(e.pairs, static_cast<int>(r.pair_ratios.size()));
  EXPECT_NEAR(e.gain, 0.08, 0.01);
  EXPECT_LT(e.lo, 0.08);
  EXPECT_GT(e.hi, 0.08);
  // A/A: the pooled effect's interval holds zero.
  o.effect = 0;
  EffectEstimate aa = PairedEffect(MeasureKeeps(Quiet(), o).pair_ratios);
  EXPECT_LT(aa.lo, 0);
  EXPECT_GT(aa.hi, 0);
}

TEST(FalseKeepsTest, PairedEffectIsTheGeometricMeanWithAStudentTInterval) {
  // log ratios +-0.1 around log(1.1): mean exactly log(1.1).
  const double c = std::log(1.1);
  EffectEstimate e = PairedEffect({std::exp(c - 0.1), std::exp(c + 0.1), std::exp(c)});
  EXPECT_EQ(e.pairs, 3);
  EXPECT_NEAR(e.gain, 0.1, 1e-12);
  // sd 0.1, n 3: half width t(0.95, 2) * 0.1 / sqrt(3) = 4.3027 * 0.0577 = 0.2484.
  EXPECT_NEAR(std::log(1 + e.hi) - c, 0.2484, 1e-3);
  EXPECT_NEAR(c - std::log(1 + e.lo), 0.2484, 1e-3);
  // Non-positive ratios (a failed trial) are left out; one ratio has no interval.
  EffectEstimate one = PairedEffect({0.0, 1.2});
  EXPECT_EQ(one.pairs, 1);
  EXPECT_NEAR(one.gain, 0.2, 1e-12);
  EXPECT_TRUE(std::isinf(one.hi));
  EXPECT_EQ(PairedEffect({}).pairs, 0);
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
