// The matched-budget comparison on small synthetic surfaces: every strategy through the
// session's protocol, the field's scores, P(t), the hold-out mark.
#include "lab/compare.h"

#include <gtest/gtest.h>

#include "core/stats.h"
#include "lab/test_surfaces.h"

namespace hone::lab {
namespace {

class CompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = MakeDemo();
    ASSERT_TRUE(d) << d.error().ToString();
    demo_ = std::move(*d);
  }
  Demo demo_;
};

TEST_F(CompareTest, EveryStrategyIsScoredAtTheSameBudgets) {
  search::ResponseSurface s = DemoSurface(0.01);
  CompareOptions o;
  o.seeds = 12;
  o.budgets = {4, 8, 16};
  o.surface_name = "demo";
  o.bootstrap = 50;
  o.jobs = 2;
  ASSERT_OK_AND_ASSIGN(CompareReport r, Compare(s, demo_.catalog, demo_.heuristics, o));
  EXPECT_EQ(r.points, 30);
  EXPECT_EQ(r.horizon, 29);
  ASSERT_EQ(r.strategies.size(), 4u);
  const char* names[] = {"planner", "random", "tpe", "grid"};
  for (size_t i = 0; i < 4; ++i) {
    const StrategyResult& x = r.strategies[i];
    EXPECT_EQ(x.name, names[i]);
    EXPECT_EQ(x.to_reach.size(), 12u);
    ASSERT_EQ(x.at_budget.size(), 3u);
    for (size_t b = 0; b < 3; ++b) {
      for (size_t seed = 0; seed < 12; ++seed) {
        EXPECT_GT(x.at_budget[b][seed], 0.5);
        EXPECT_LE(x.at_budget[b][seed], 1.0 + 1e-12);
        EXPECT_LE(x.used[b][seed], o.budgets[b]);  // never more candidates than the budget
      }
    }
    EXPECT_EQ(x.curve.size(), 12u);
    EXPECT_EQ(x.curve[0].size(), static_cast<size_t>(o.curve_points));
  }
  EXPECT_TRUE(r.timed);
  EXPECT_EQ(r.times.size(), 50u);
  EXPECT_GT(r.times.back(), 0);
  EXPECT_NEAR(r.noise, 0.01 * std::sqrt(2.0), 1e-9);
  EXPECT_DOUBLE_EQ(r.prelude_s, 7 * 2.0);
  // A separable surface with little noise: coordinate moves find the best in few
  // candidates (what each costs in time is the protocol's business: P(t) below).
  EXPECT_LT(r.strategies[0].MedianToReach(), r.strategies[1].MedianToReach());
  EXPECT_GE(Mean(r.strategies[0].at_budget[2]), 0.95);
  EXPECT_TRUE(r.held_out);
  ASSERT_EQ(r.curves.size(), 3u);
  EXPECT_EQ(r.curves[0].strategy, "planner");
  EXPECT_LE(r.curves[0].area_lo, r.curves[0].area + 1e-12);
  EXPECT_GE(r.curves[0].area_hi, r.curves[0].area - 1e-12);
  EXPECT_FALSE(r.example.empty());
  EXPECT_NE(r.example_tree.find("idea tree"), std::string::npos);

  // The keep bar's dead ends, recounted from the surface and the budgets' incumbents.
  int dead = 0, dead_below = 0;
  for (const search::SurfacePoint& p : s.points()) {
    const double q = s.Quality(p.mean());
    if (q * (1 + r.keep_threshold_median) <= 1 + 1e-9) continue;
    ++dead;
    dead_below += q < 0.95;
  }
  EXPECT_GE(dead, 1);  // the best at least
  EXPECT_EQ(r.dead_ends, dead);
  EXPECT_EQ(r.dead_ends_below, dead_below);
  EXPECT_NEAR(r.dead_end_from, 1 / (1 + r.keep_threshold_median), 1e-12);
  for (const StrategyResult& x : r.strategies) {
    double stuck = 0;
    for (double q : x.at_budget.back()) stuck += DeadEnd(q, r.keep_threshold_median) && q < 0.95;
    EXPECT_DOUBLE_EQ(x.dead_end, stuck / 12) << x.name;
  }

  std::string text = FormatCompare(s, r, "demo.json");
  for (const char* want : {"HELD OUT", "to 95% of the best", "B=16", "P(t) against random search", "area (mean of P",
                           "goals (held out)", "idea tree", "3-9 paired looks", "dead ends of the keep bar"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  std::string summary = FormatSummary({r});
  EXPECT_NE(summary.find("demo"), std::string::npos);
  EXPECT_NE(summary.find("held-out"), std::string::npos);

  // A missed budget says whether the gap is within the seeds' spread: a planner a hair
  // behind random search is, one far behind is not.
  {
    CompareReport behind = r;
    behind.goals.at_budget[0] = false;
    std::vector<double>& planner = behind.strategies[0].at_budget[0];
    const std::vector<double>& rnd = behind.strategies[1].at_budget[0];
    for (size_t k = 0; k < planner.size(); ++k) planner[k] = rnd[k] - 0.0001;
    std::string hair = FormatCompare(s, behind, "demo.json");
    EXPECT_NE(hair.find("B=4: behind random"), std::string::npos) << hair;
    EXPECT_NE(hair.find("within the seeds' spread"), std::string::npos) << hair;
    for (size_t k = 0; k < planner.size(); ++k) planner[k] = rnd[k] - 0.3;
    std::string far = FormatCompare(s, behind, "demo.json");
    EXPECT_NE(far.find("planner - random -30.00 points"), std::string::npos) << far;
    EXPECT_EQ(far.find("within the seeds' spread"), std::string::npos) << far;
  }

  // Deterministic for a seed, whatever the number of threads.
  o.jobs = 1;
  ASSERT_OK_AND_ASSIGN(CompareReport again, Compare(s, demo_.catalog, demo_.heuristics, o));
  EXPECT_EQ(again.strategies[1].to_reach, r.strategies[1].to_reach);
  EXPECT_EQ(FormatCompare(s, again, "demo.json"), text);
}

// --plateau: a run ends as a session's framework phase does, after that many candidates
// in a row without a KEEP; the budgets then score where each run stopped.
TEST_F(CompareTest, ThePlateauRuleEndsRunsLikeASession) {
  search::ResponseSurface s = DemoSurface(0.01);
  CompareOptions o;
  o.seeds = 8;
  o.budgets = {16};
  o.bootstrap = 10;
  o.surface_name = "demo";
  ASSERT_OK_AND_ASSIGN(CompareReport free, Compare(s, demo_.catalog, demo_.heuristics, o));
  o.plateau = 1;
  ASSERT_OK_AND_ASSIGN(CompareReport stopped, Compare(s, demo_.catalog, demo_.heuristics, o));
  EXPECT_EQ(stopped.plateau, 1);
  for (size_t i = 0; i < stopped.strategies.size(); ++i) {
    if (stopped.strategies[i].name == "grid") continue;  // the coarse grid's runs are its own
    EXPECT_LT(Mean(stopped.strategies[i].used[0]), Mean(free.strategies[i].used[0])) << stopped.strategies[i].name;
  }
  // Random search on a surface with 30 points: a run without a plateau judges all 16.
  EXPECT_DOUBLE_EQ(Mean(free.strategies[1].used[0]), 16.0);
  EXPECT_NE(FormatCompare(s, stopped, "demo.json").find("1 candidates in a row without a KEEP"), std::string::npos);
  o.protocol.measurement.max_pairs = 6;  // the header prints the protocol's looks
  ASSERT_OK_AND_ASSIGN(CompareReport six, Compare(s, demo_.catalog, demo_.heuristics, o));
  EXPECT_NE(FormatCompare(s, six, "demo.json").find("3-6 paired looks"), std::string::npos);
  EXPECT_EQ(FormatCompare(s, free, "demo.json").find("in a row without a KEEP"), std::string::npos);
}

TEST_F(CompareTest, ASurfaceTheHeuristicsWereTunedOnIsMarked) {
  search::ResponseSurface s = DemoSurface(0.01);
  search::Heuristics h = demo_.heuristics;
  h.tuned_on = {"demo"};
  CompareOptions o;
  o.seeds = 3;
  o.budgets = {4};
  o.bootstrap = 10;
  o.surface_name = "demo";
  ASSERT_OK_AND_ASSIGN(CompareReport r, Compare(s, demo_.catalog, h, o));
  EXPECT_FALSE(r.held_out);
  EXPECT_FALSE(r.goals.held_out);
  std::string text = FormatCompare(s, r, "demo.json");
  EXPECT_NE(text.find("TUNED ON THIS SURFACE"), std::string::npos) << text;
  EXPECT_NE(FormatSummary({r}).find("TUNED"), std::string::npos);
}

// The header tells a point that never served from one whose server stalled (recorded
// as "invalid: no token arrived inside the measurement window").
TEST_F(CompareTest, TheHeaderSaysHowThePointsFailed) {
  search::ResponseSurface s = DemoSurface(0.01);
  const auto* best = s.Best();
  ASSERT_NE(best, nullptr);
  const Config best_config = best->config;
  int marked = 0;
  for (auto& p : s.mutable_points()) {
    if (marked == 2 || p.config == s.stock() || p.config == best_config) continue;
    p.samples.clear();
    p.failure_kind = marked++ == 0 ? "context_create" : "invalid: no token arrived inside the measurement window";
  }
  CompareOptions o;
  o.seeds = 2;
  o.budgets = {4};
  o.bootstrap = 10;
  o.surface_name = "demo";
  ASSERT_OK_AND_ASSIGN(CompareReport r, Compare(s, demo_.catalog, demo_.heuristics, o));
  std::string text = FormatCompare(s, r, "demo.json");
  EXPECT_NE(text.find("2 failed (1 to launch, 1 without a valid run)"), std::string::npos) << text.substr(0, 600);
  // Each strategy's candidates that never served are counted, never more than it judged,
  // and printed beside the budget table.
  for (const StrategyResult& x : r.strategies) {
    ASSERT_EQ(x.failed.size(), 1u);
    for (size_t seed = 0; seed < 2; ++seed) {
      EXPECT_GE(x.failed[0][seed], 0);
      EXPECT_LE(x.failed[0][seed], x.used[0][seed]) << x.name;
    }
  }
  EXPECT_NE(text.find("failed candidates by then (never launched or no valid run), mean: planner "), std::string::npos)
      << text;
}

// A surface where a third of the points never launch: random search spends candidates
// on them, and the count says how many.
TEST_F(CompareTest, FailedCandidatesAreCountedPerStrategy) {
  search::ResponseSurface s = DemoSurface(0.01);
  const Config stock = s.stock();
  const Config best = s.Best()->config;
  int i = 0;
  for (auto& p : s.mutable_points()) {
    if (i++ % 3 != 1 || p.config == stock || p.config == best) continue;
    p.samples.clear();
    p.failure_kind = "crashed";
  }
  CompareOptions o;
  o.seeds = 10;
  o.budgets = {8, 16};
  o.bootstrap = 10;
  o.surface_name = "demo";
  ASSERT_OK_AND_ASSIGN(CompareReport r, Compare(s, demo_.catalog, demo_.heuristics, o));
  const StrategyResult& random = r.strategies[1];
  ASSERT_EQ(random.name, "random");
  EXPECT_GT(Mean(random.failed[0]), 0.5);  // about a third of 8
  for (const StrategyResult& x : r.strategies) {
    for (size_t seed = 0; seed < 10; ++seed) {
      EXPECT_LE(x.failed[0][seed], x.used[0][seed]) << x.name;
      if (x.name != "grid") {  // the grid's budgets are separate runs
        EXPECT_LE(x.failed[0][seed], x.failed[1][seed]) << x.name;
      }
    }
  }
}

TEST_F(CompareTest, RefusesWhatItCannotReplay) {
  search::ResponseSurface s = search::ResponseSurface::Grid({{"nope", {"1", "2"}}}, Config{{"nope", "1"}});
  s.mutable_points()[0].samples = {1, 1};
  s.mutable_points()[1].samples = {2, 2};
  auto r = Compare(s, demo_.catalog, demo_.heuristics, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not in the demo catalog"), std::string::npos) << r.error().message;
  search::ResponseSurface unmeasured = DemoSurface(0.01);
  unmeasured.MutableFind(unmeasured.stock())->samples.clear();
  EXPECT_FALSE(Compare(unmeasured, demo_.catalog, demo_.heuristics, {}));
}

// A recording under way (points not measured yet) or one without a repeated point (the
// noise unknown) is refused, not replayed as launch failures or as a noiseless host.
TEST_F(CompareTest, RefusesAPartialRecordingAndAnUnknownNoise) {
  CompareOptions o;
  o.seeds = 2;
  o.budgets = {4};
  o.bootstrap = 10;
  o.surface_name = "demo";
  search::ResponseSurface partial = DemoSurface(0.01);
  const Config best = partial.Best()->config;
  int cleared = 0;
  for (auto& p : partial.mutable_points()) {
    if (cleared == 3 || p.config == partial.stock() || p.config == best) continue;
    p.samples.clear();
    ++cleared;
  }
  auto r = Compare(partial, demo_.catalog, demo_.heuristics, o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("3 of 30 points are not measured yet"), std::string::npos) << r.error().message;
  // A point that failed to launch is measured: its failure is what the replay shows.
  for (auto& p : partial.mutable_points()) {
    if (p.samples.empty()) p.failure_kind = "crashed";
  }
  EXPECT_OK(Compare(partial, demo_.catalog, demo_.heuristics, o));

  search::ResponseSurface once = DemoSurface(0.01);
  for (auto& p : once.mutable_points()) p.samples.resize(1);
  r = Compare(once, demo_.catalog, demo_.heuristics, o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no point was measured twice"), std::string::npos) << r.error().message;
  o.protocol.noise = 0.05;  // the noise given: the replay has what it needs
  EXPECT_OK(Compare(once, demo_.catalog, demo_.heuristics, o));
}

// Under a keep bar of 10% an incumbent above 1/1.1 = 90.9% of the best can never be
// replaced: no point is 10% better than it.
TEST(DeadEndTest, AnIncumbentNoPointBeatsByTheBarIsADeadEnd) {
  EXPECT_TRUE(DeadEnd(1.0, 0.1));
  EXPECT_TRUE(DeadEnd(0.92, 0.1));
  EXPECT_FALSE(DeadEnd(0.90, 0.1));
  EXPECT_FALSE(DeadEnd(1.0 / 1.1, 0.1));  // the best is exactly 10% better: a KEEP can still reach it
  EXPECT_TRUE(DeadEnd(0.86, 0.2));
  EXPECT_FALSE(DeadEnd(0.5, 0.5));
}

// The gap between two strategies' means over seeds, with the spread of those means.
TEST(MeanDifferenceTest, AGapSmallerThanTheSeedsSpreadIsNoDifference) {
  const std::vector<double> a = {0.90, 0.92, 0.94, 0.96, 0.98};  // mean 0.94, sample sd 0.0316
  const std::vector<double> b = {0.91, 0.93, 0.95, 0.97, 0.99};  // mean 0.95
  Interval d = MeanDifference(a, b);
  EXPECT_NEAR(d.estimate, -0.01, 1e-12);
  const double half = 1.959964 * std::sqrt(2 * 0.001 / 5);  // each mean's variance: s^2 / n
  EXPECT_NEAR(d.lo, -0.01 - half, 1e-9);
  EXPECT_NEAR(d.hi, -0.01 + half, 1e-9);
  EXPECT_GT(d.hi, 0);
  // Constant runs: no spread, the gap is the interval.
  Interval c = MeanDifference(std::vector<double>(4, 0.9), std::vector<double>(4, 1.0));
  EXPECT_NEAR(c.lo, -0.1, 1e-12);
  EXPECT_NEAR(c.hi, -0.1, 1e-12);
}

// P(t) by hand: two seeds per side, three time points.
TEST(PerformanceCurveTest, ScoresAgainstRandomSearchFromTheFirstJudgedCandidate) {
  // Stock quality 0.8. Random: (0.8, 0.8, 0.9) and (0.8, 0.9, 0.9) -> mean (0.8, 0.85, 0.9).
  // Strategy: (0.8, 1.0, 1.0) twice -> P = (0, (1-0.85)/(1-0.85), (1-0.9)/(1-0.9)) = (0, 1, 1).
  std::vector<std::vector<double>> random = {{0.8, 0.8, 0.9}, {0.8, 0.9, 0.9}};
  std::vector<std::vector<double>> good = {{0.8, 1.0, 1.0}, {0.8, 1.0, 1.0}};
  PCurve c = PerformanceCurve("x", good, random, 0.8, 20, 1);
  ASSERT_EQ(c.p.size(), 3u);
  EXPECT_DOUBLE_EQ(c.p[0], 0.0);
  EXPECT_DOUBLE_EQ(c.p[1], 1.0);
  EXPECT_DOUBLE_EQ(c.p[2], 1.0);
  EXPECT_NEAR(c.area, 2.0 / 3, 1e-12);
  EXPECT_EQ(c.first_active, 1);  // before that both sat at the stock
  EXPECT_TRUE(c.above_zero);
  // Worse than random somewhere: not above zero.
  std::vector<std::vector<double>> late = {{0.8, 0.8, 1.0}, {0.8, 0.8, 1.0}};
  PCurve d = PerformanceCurve("y", late, random, 0.8, 20, 1);
  EXPECT_LT(d.p[1], 0);
  EXPECT_FALSE(d.above_zero);
  EXPECT_NEAR(d.min_p, (0.8 - 0.85) / 0.15, 1e-12);
  // Random at the optimum: P is 0, not a division by zero.
  PCurve e = PerformanceCurve("z", {{1.0}}, {{1.0}}, 0.8, 5, 1);
  EXPECT_DOUBLE_EQ(e.p[0], 0.0);
}

}  // namespace
}  // namespace hone::lab
