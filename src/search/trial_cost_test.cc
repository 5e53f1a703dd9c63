// The planner's cost model of the session's measurement protocol.
#include "search/trial_cost.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hone::search {
namespace {

TEST(TrialCostTest, StudentTQuantilesMatchTheTables) {
  EXPECT_NEAR(TQuantile(0.95, 1), 12.706, 0.002);
  EXPECT_NEAR(TQuantile(0.95, 2), 4.303, 0.002);
  EXPECT_NEAR(TQuantile(0.95, 10), 2.228, 0.002);
  EXPECT_NEAR(TQuantile(0.99, 5), 4.032, 0.002);
  EXPECT_NEAR(TQuantile(0.90, 1000), 1.646, 0.002);
}

TEST(TrialCostTest, ClearOutcomesAreCheapAndNearMissesTakeEveryLook) {
  TrialCostModel m({});  // the session's defaults: screen, 3-9 pairs in steps of 3
  EXPECT_DOUBLE_EQ(m.DecisiveRuns(), 7);
  const double noise = 0.03, floor = 0.03;
  // Far worse: the screen drops it.
  EXPECT_NEAR(m.ExpectedRuns(std::log(0.5), noise, floor), 1.0, 0.01);
  // Far better: decided at the first look.
  EXPECT_NEAR(m.ExpectedRuns(std::log(1.5), noise, floor), 7.0, 0.05);
  // Neutral and near the threshold: more looks, up to every one (1 + 18 runs).
  double neutral = m.ExpectedRuns(0.0, noise, floor);
  double near = m.ExpectedRuns(std::log1p(0.03), noise, floor);
  EXPECT_GT(neutral, 9);
  EXPECT_GT(near, neutral);
  EXPECT_LE(near, 19.0 + 1e-9);
  // More noise, longer comparisons.
  EXPECT_GT(m.ExpectedRuns(0.0, 0.08, 0.08), 1.0);
  // A belief averages over effects: a wide belief is cheaper than "surely neutral".
  EXPECT_LT(m.ExpectedRunsUnder(0.0, 0.4, noise, floor), neutral);
  EXPECT_DOUBLE_EQ(m.ExpectedRunsUnder(0.0, 0.0, noise, floor), neutral);
  // Without a screen nothing is dropped early.
  TrialCostModel unscreened({.screen = false});
  EXPECT_DOUBLE_EQ(unscreened.DecisiveRuns(), 6);
  EXPECT_NEAR(unscreened.ExpectedRuns(std::log(0.5), noise, floor), 6.0, 0.05);
}

}  // namespace
}  // namespace hone::search
