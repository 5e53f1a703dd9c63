#include "measure/verdict.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "core/rng.h"

namespace hone::measure {
namespace {

// Simulates the protocol on synthetic distributions: pairs share a drift term (the
// machine's state at that moment), each measurement adds its own noise. Pairs are
// added from min_pairs up to max_pairs, `step` at a time, while the verdict is
// inconclusive (the session's defaults: 3, 6, 9 pairs).
Verdict Simulate(double true_gain, double noise, double drift, uint64_t seed, double noise_floor,
                 int min_pairs = 3, int max_pairs = 9, int step = 3) {
  Rng rng(seed);
  VerdictInput in;
  in.min_gain = 0.01;
  in.noise_floor = noise_floor;
  in.seed = seed;
  in.looks = (max_pairs - min_pairs) / step + 1;
  VerdictResult r;
  while (static_cast<int>(in.a.size()) < max_pairs) {
    double d = 1.0 + drift * rng.NextGaussian();
    in.a.push_back(100 * d * (1 + noise * rng.NextGaussian()));
    in.b.push_back(100 * (1 + true_gain) * d * (1 + noise * rng.NextGaussian()));
    int n = static_cast<int>(in.a.size());
    if (n < min_pairs || (n - min_pairs) % step != 0) continue;
    r = Judge(in);
    if (r.verdict != Verdict::kInconclusive) return r.verdict;
  }
  return r.verdict;
}

// A/A noise floor as the prelude measures it (3 pairs of the same config).
double AaFloor(double noise, double drift, uint64_t seed) {
  Rng rng(seed ^ 0xabcdef);
  std::vector<double> a1, a2;
  for (int i = 0; i < 3; ++i) {
    double d = 1.0 + drift * rng.NextGaussian();
    a1.push_back(100 * d * (1 + noise * rng.NextGaussian()));
    a2.push_back(100 * d * (1 + noise * rng.NextGaussian()));
  }
  return NoiseFloor(a1, a2);
}

TEST(VerdictTest, RealTwoPercentGainUnderOnePercentNoiseIsKept) {
  int keep = 0, revert = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Verdict v = Simulate(0.02, 0.01, 0.10, seed, AaFloor(0.01, 0.10, seed));
    keep += v == Verdict::kKeep;
    revert += v == Verdict::kRevert;
  }
  std::printf("2%% gain, 1%% noise: %d keeps, %d reverts of 200\n", keep, revert);
  EXPECT_GE(keep, 150) << "keeps " << keep << " reverts " << revert;  // the gain is found most of the time
  EXPECT_LE(revert, 10);                                               // and almost never thrown away
}

TEST(VerdictTest, ZeroGainUnderTenPercentNoiseIsNotKept) {
  int keep = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    keep += Simulate(0.0, 0.10, 0.10, seed, AaFloor(0.10, 0.10, seed)) == Verdict::kKeep;
  }
  std::printf("zero gain, 10%% noise: %d false keeps of 200\n", keep);
  EXPECT_LE(keep, 6) << "false keeps: " << keep;  // <= 3%
}

TEST(VerdictTest, ClearLossIsReverted) {
  int revert = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) revert += Simulate(-0.10, 0.02, 0.05, seed, 0.005) == Verdict::kRevert;
  EXPECT_GE(revert, 98);
}

// The vetoes (SLO, accuracy, critic, ...) are Decide()'s: session/comparison_test.cc.
TEST(VerdictTest, MinimizedMetrics) {
  VerdictInput in;
  in.a = {100, 102, 98};   // latency in ms
  in.b = {80, 81, 79};     // 20% lower is better
  in.maximize = false;
  VerdictResult r = Judge(in);
  EXPECT_EQ(r.verdict, Verdict::kKeep);
  EXPECT_NEAR(r.gain, 300.0 / 240.0 - 1.0, 1e-9);
}

TEST(VerdictTest, ThresholdIsTheLargerOfMinGainAndNoiseFloor) {
  VerdictInput in;
  in.a = {100, 100, 100, 100};
  in.b = {103, 103.2, 102.8, 103};
  in.noise_floor = 0.05;  // the A/A comparison moved 5%: a 3% gain is not believable
  VerdictResult r = Judge(in);
  EXPECT_DOUBLE_EQ(r.threshold, 0.05);
  EXPECT_EQ(r.verdict, Verdict::kRevert);
  in.noise_floor = 0.0;
  EXPECT_EQ(Judge(in).verdict, Verdict::kKeep);
}

TEST(VerdictTest, StudentTQuantiles) {
  EXPECT_NEAR(StudentT(0.95, 2), 4.303, 1e-3);
  EXPECT_NEAR(StudentT(0.95, 10), 2.228, 1e-3);
  EXPECT_NEAR(StudentT(0.95, 1000000), 1.960, 1e-3);
  EXPECT_NEAR(StudentT(0.95, 12), 2.179, 0.01);
  EXPECT_NEAR(NoiseFloor({100, 100}, {103, 101}), 0.02, 1e-12);
  EXPECT_NEAR(NoiseFloor({100, 100, 100}, {101, 340, 98}), 0.02, 1e-12);  // one wild pair ignored
}

}  // namespace
}  // namespace hone::measure
