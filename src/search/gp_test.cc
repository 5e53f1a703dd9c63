#include "search/gp.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hone::search {
namespace {

TEST(GpTest, PriorWithoutDataAndInterpolationWithData) {
  Gp1d empty(0.3, 1.0, 0.05);
  GpPrediction p = empty.Predict(3.0);
  EXPECT_DOUBLE_EQ(p.mean, 0.0);
  EXPECT_DOUBLE_EQ(p.sd, 0.3);
  Gp1d gp(0.3, 1.0, 0.01);
  gp.Add(GpInput(8), 0.0);
  gp.Add(GpInput(16), 0.2);
  // At a measured point: close to the data, little uncertainty left.
  GpPrediction at16 = gp.Predict(GpInput(16));
  EXPECT_NEAR(at16.mean, 0.2, 0.01);
  EXPECT_LT(at16.sd, 0.02);
  // One doubling further: the trend carries on part of the way, with more doubt.
  GpPrediction at32 = gp.Predict(GpInput(32));
  EXPECT_GT(at32.mean, 0.05);
  EXPECT_GT(at32.sd, at16.sd);
  // Far away: back to the prior.
  GpPrediction far = gp.Predict(GpInput(1 << 20));
  EXPECT_NEAR(far.mean, 0.0, 1e-3);
  EXPECT_NEAR(far.sd, 0.3, 1e-3);
}

TEST(GpTest, NoisyRepeatsAverage) {
  Gp1d gp(1.0, 1.0, 0.1);
  gp.Add(2.0, 0.1);
  gp.Add(2.0, 0.3);
  EXPECT_NEAR(gp.Predict(2.0).mean, 0.2, 0.01);
}

TEST(GpTest, ExpectedImprovement) {
  EXPECT_NEAR(ExpectedImprovement(0.0, 1.0, 0.0), 1.0 / std::sqrt(2 * M_PI), 1e-9);
  EXPECT_DOUBLE_EQ(ExpectedImprovement(0.5, 0.0, 0.2), 0.3);
  EXPECT_DOUBLE_EQ(ExpectedImprovement(0.1, 0.0, 0.2), 0.0);
  EXPECT_GT(ExpectedImprovement(0.0, 0.3, 0.0), ExpectedImprovement(0.0, 0.1, 0.0));
  EXPECT_LT(ExpectedImprovement(-1.0, 0.1, 0.0), 1e-6);
  EXPECT_EQ(GpInput(0), 0.0);
  EXPECT_EQ(GpInput(1), 1.0);
}

}  // namespace
}  // namespace hone::search
