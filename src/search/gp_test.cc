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

// What a change is expected to prove under a keep threshold: with no threshold and no
// estimation noise, the expected improvement plus nothing; above a threshold, the
// tail, which a wider belief (a multi-knob move) reaches more often.
TEST(GpTest, KeptGainIsTheGainAboveTheKeepThreshold) {
  EXPECT_NEAR(KeptGain(0.0, 0.1, 0.0, 0.0), ExpectedImprovement(0.0, 0.1, 0.0), 1e-12);
  EXPECT_DOUBLE_EQ(KeptGain(0.3, 0.0, 0.2, 0.0), 0.3);  // certain and above: all of it
  EXPECT_DOUBLE_EQ(KeptGain(0.1, 0.0, 0.2, 0.0), 0.0);  // certain and below: none
  EXPECT_LT(KeptGain(0.0, 0.1, 0.15, 0.02), KeptGain(0.0, 0.1, 0.02, 0.02));
  // Under a high threshold the wider belief expects to prove more, by a larger factor
  // than under a low one.
  const double wide_high = KeptGain(0.0, 0.2, 0.15, 0.03), narrow_high = KeptGain(0.0, 0.1, 0.15, 0.03);
  const double wide_low = KeptGain(0.0, 0.2, 0.01, 0.03), narrow_low = KeptGain(0.0, 0.1, 0.01, 0.03);
  EXPECT_GT(wide_high / narrow_high, wide_low / narrow_low);
  // E[Y Phi((Y - t)/se)] by brute force.
  double sum = 0, w = 0;
  for (double z = -8; z <= 8; z += 0.001) {
    const double y = 0.05 + 0.1 * z, pdf = std::exp(-0.5 * z * z);
    sum += y * 0.5 * std::erfc(-(y - 0.12) / 0.04 / std::sqrt(2.0)) * pdf;
    w += pdf;
  }
  EXPECT_NEAR(KeptGain(0.05, 0.1, 0.12, 0.04), sum / w, 1e-6);
}

}  // namespace
}  // namespace hone::search
