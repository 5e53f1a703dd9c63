#include "kernel/keep_rule.h"

#include "testing/test_util.h"

namespace hone::kernel {
namespace {

TEST(KeepRuleTest, StudentTQuantilesMatchTables) {
  // One-sided 95% values used by KernelForge's rule and any t table.
  EXPECT_NEAR(StudentTQuantile(0.95, 2), 2.920, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.95, 5), 2.015, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.95, 8), 1.860, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.975, 10), 2.228, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.95, 1000), 1.646, 1e-3);
}

TEST(KeepRuleTest, KeepsASignificantGainAboveTheFloor) {
  std::vector<PairedRun> runs = {{10.0, 8.0}, {10.2, 8.1}, {9.9, 7.9}};
  KeepDecision d = DecideKeep(runs, KeepSpec{});
  EXPECT_EQ(d.verdict, Verdict::kKeep) << d.reason;
  EXPECT_NEAR(d.speedup, 1.25, 0.01);
  EXPECT_GT(d.lo, 1.0);
  EXPECT_GE(d.hi, d.speedup);
  EXPECT_EQ(d.runs, 3);
}

TEST(KeepRuleTest, FasterButUnderTheFloorIsInconclusive) {
  std::vector<PairedRun> runs = {{10.0, 9.9}, {10.0, 9.89}, {10.0, 9.91}};  // +1%, tight
  KeepDecision d = DecideKeep(runs, KeepSpec{});
  EXPECT_GT(d.lo, 1.0);
  EXPECT_EQ(d.verdict, Verdict::kInconclusive);
  EXPECT_THAT(d.reason, ::testing::HasSubstr("under the floor"));
}

TEST(KeepRuleTest, NoisyGainIsNotSignificant) {
  std::vector<PairedRun> runs = {{10.0, 7.0}, {10.0, 11.0}, {10.0, 9.0}};
  KeepDecision d = DecideKeep(runs, KeepSpec{});
  EXPECT_EQ(d.verdict, Verdict::kInconclusive);
  EXPECT_LT(d.lo, 1.0);
}

TEST(KeepRuleTest, SignificantlySlowerReverts) {
  std::vector<PairedRun> runs = {{10.0, 11.0}, {10.0, 11.1}, {10.0, 10.9}};
  EXPECT_EQ(DecideKeep(runs, KeepSpec{}).verdict, Verdict::kRevert);
}

TEST(KeepRuleTest, OneRunOrNoneIsInconclusive) {
  std::vector<PairedRun> one = {{10.0, 5.0}};
  EXPECT_EQ(DecideKeep(one, KeepSpec{}).verdict, Verdict::kInconclusive);
  std::vector<PairedRun> broken = {{0.0, 5.0}};
  KeepDecision d = DecideKeep(broken, KeepSpec{});
  EXPECT_EQ(d.runs, 0);
  EXPECT_EQ(d.verdict, Verdict::kInconclusive);
}

TEST(KeepRuleTest, FamilyUsesTimeWeightedSpeedupAndCapsRegressions) {
  // Weighted: sum(w) / sum(w/s) = 2 / (1/2 + 1/1) = 1.333.
  std::vector<CaseOutcome> cases = {{1.0, 2.0}, {1.0, 1.0}};
  FamilyDecision f = DecideFamily(cases, KeepSpec{});
  EXPECT_NEAR(f.weighted, 4.0 / 3.0, 1e-9);
  EXPECT_NEAR(f.geomean, std::sqrt(2.0), 1e-9);
  EXPECT_TRUE(f.accepted) << f.reason;
  cases.push_back({0.1, 0.9});  // one case 10% slower: refused whatever the average
  f = DecideFamily(cases, KeepSpec{});
  EXPECT_FALSE(f.accepted);
  EXPECT_THAT(f.reason, ::testing::HasSubstr("regresses"));
}

}  // namespace
}  // namespace hone::kernel
