#include "core/stats.h"

#include <gtest/gtest.h>

#include "core/rng.h"

namespace hone {
namespace {

TEST(StatsTest, LinearInterpolationPercentiles) {
  std::vector<double> xs = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(Percentile(xs, 50), 3.0);
  EXPECT_DOUBLE_EQ(Percentile(xs, 90), 4.6);  // k = 4*0.9 = 3.6
  EXPECT_DOUBLE_EQ(Percentile(xs, 0), 1.0);
  EXPECT_DOUBLE_EQ(Percentile(xs, 100), 5.0);
  std::vector<double> two = {10, 20};
  EXPECT_DOUBLE_EQ(Percentile(two, 75), 17.5);
  EXPECT_DOUBLE_EQ(Percentile(std::vector<double>{}, 50), 0.0);
}

TEST(StatsTest, SummaryMatchesNumpy) {
  // numpy: np.percentile([3,1,4,1,5,9,2,6], [50,90,99]) = [3.5, 6.9, 8.79]; std (ddof=0) = 2.5739...
  std::vector<double> xs = {3, 1, 4, 1, 5, 9, 2, 6};
  Summary s = Summarize(xs);
  EXPECT_EQ(s.n, 8u);
  EXPECT_DOUBLE_EQ(s.mean, 3.875);
  EXPECT_DOUBLE_EQ(s.p50, 3.5);
  EXPECT_NEAR(s.p90, 6.9, 1e-12);
  EXPECT_NEAR(s.p99, 8.79, 1e-12);
  EXPECT_NEAR(s.std, 2.5708704751503917, 1e-12);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 9);
}

TEST(StatsTest, PairedBootstrapCoversTrueRatio) {
  Rng rng(7);
  std::vector<double> a, b;
  for (int i = 0; i < 10; ++i) {
    double drift = 100 + 20 * rng.NextGaussian();  // shared by both arms of the pair
    a.push_back(drift * (1 + 0.005 * rng.NextGaussian()));
    b.push_back(drift * 1.05 * (1 + 0.005 * rng.NextGaussian()));
  }
  Interval ci = BootstrapPairedRatio(a, b, 0.95, 2000, 1);
  EXPECT_LT(ci.lo, 1.05);
  EXPECT_GT(ci.hi, 1.05);
  EXPECT_GT(ci.lo, 1.0);  // pairing removes the large shared drift
  // Deterministic for a seed.
  Interval again = BootstrapPairedRatio(a, b, 0.95, 2000, 1);
  EXPECT_EQ(ci.lo, again.lo);
  EXPECT_EQ(ci.hi, again.hi);
}

TEST(StatsTest, UnpairedBootstrapIsWiderUnderDrift) {
  Rng rng(11);
  std::vector<double> a, b;
  for (int i = 0; i < 10; ++i) {
    double drift = 100 + 20 * rng.NextGaussian();
    a.push_back(drift);
    b.push_back(drift * 1.05);
  }
  Interval paired = BootstrapPairedRatio(a, b, 0.95, 2000, 3);
  Interval unpaired = BootstrapRatioOfMeans(a, b, 0.95, 2000, 3);
  EXPECT_GT(unpaired.hi - unpaired.lo, 5 * (paired.hi - paired.lo));
}

}  // namespace
}  // namespace hone
