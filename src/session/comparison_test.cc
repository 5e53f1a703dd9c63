#include "session/comparison.h"

#include <gtest/gtest.h>

#include "testing/fake_executor.h"
#include "sys/files.h"
#include "testing/fake_clock.h"
#include "testing/test_util.h"

namespace hone::session {
namespace {

using measure::TrialRole;

// The session's side of a comparison on the fake executor: numbered trials and a
// budget counted in trials.
class FakeRunner final : public TrialRunner {
 public:
  explicit FakeRunner(FakeExecutor& exec) : exec_(exec) {}
  Result<measure::TrialOutcome> RunTrial(const Arm& arm, const measure::OperatingPoint& point) override {
    char id[16];
    std::snprintf(id, sizeof id, "t%04d", next_++);
    return exec_.Run({id, arm.role, arm.config, point, arm.server_binary});
  }
  bool CanAfford(int trials) const override { return static_cast<int>(exec_.ran.size()) + trials <= budget_trials; }
  Status Save() override {
    ++saves;
    return Ok();
  }
  void Progress(const std::string& line) override { progress.push_back(line); }

  int budget_trials = 1000;
  int saves = 0;
  std::vector<std::string> progress;

 private:
  FakeExecutor& exec_;
  int next_ = 1;
};

class ComparisonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-cmp");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    exec_.run_dir = dir_->path().string();
    exec_.clock = &clock_;
    exec_.factors = {{"speed=fast", 1.2}, {"speed=slow", 0.8}, {"speed=same", 1.0}};
  }
  // The candidate plan the coordinator uses: 3, 6, 9 pairs.
  PairPlan Plan(const std::string& candidate) {
    PairPlan p;
    p.a = {TrialRole::kIncumbent, Config{}, ""};
    size_t eq = candidate.find('=');
    p.b = {TrialRole::kCandidate, Config{{candidate.substr(0, eq), candidate.substr(eq + 1)}}, ""};
    p.point = {4, 128, 32};
    p.min_pairs = 3;
    p.max_pairs = 9;
    p.pair_step = 3;
    measure::VerdictInput in;
    in.looks = PlannedLooks(3, 9, 3);
    p.judge = in;
    return p;
  }
  std::vector<std::string> Roles() const {
    std::vector<std::string> out;
    for (const auto& r : exec_.ran) out.push_back(std::string(measure::TrialRoleName(r.role)));
    return out;
  }

  testing::FakeClock clock_;
  FakeExecutor exec_;
  std::unique_ptr<sys::TempDir> dir_;
  std::vector<std::string> at, bt;
  std::vector<double> av, bv;
};

TEST_F(ComparisonTest, InterleavesAndDecidesAtTheFirstLook) {
  FakeRunner runner(exec_);
  PairLog log(at, av, bt, bv);
  ASSERT_OK_AND_ASSIGN(ComparisonResult r, RunComparison(runner, Plan("speed=fast"), log));
  EXPECT_EQ(r.end, ComparisonEnd::kComplete);
  EXPECT_EQ(r.pairs, 3);
  ASSERT_TRUE(r.judged);
  EXPECT_EQ(r.judged->verdict, Verdict::kKeep);
  EXPECT_NEAR(r.judged->gain, 0.2, 0.02);
  EXPECT_EQ(Roles(),
            (std::vector<std::string>{"incumbent", "candidate", "incumbent", "candidate", "incumbent", "candidate"}));
  EXPECT_EQ(log.Interleaved(), (std::vector<std::string>{"t0001", "t0002", "t0003", "t0004", "t0005", "t0006"}));
  EXPECT_EQ(runner.saves, 6);  // after every trial that joined the log
  EXPECT_EQ(Decide(r, {}).verdict, Verdict::kKeep);
}

// Sequential: a noise burst in the first pairs leaves the first look inconclusive;
// pair_step more pairs follow, each look at the Bonferroni-corrected confidence.
TEST_F(ComparisonTest, AddsPairsWhileInconclusiveUpToMaxPairs) {
  int b = 0;
  exec_.adjust = [&](const measure::TrialRequest& req, double v) {
    if (req.role != TrialRole::kCandidate) return v;
    const double burst[] = {1.6, 0.85, 1.35};  // on top of its 1.2
    int k = b++;
    return k < 3 ? v * burst[k] : v;
  };
  FakeRunner runner(exec_);
  PairLog log(at, av, bt, bv);
  PairPlan plan = Plan("speed=fast");
  plan.label = "close validation";
  ASSERT_OK_AND_ASSIGN(ComparisonResult r, RunComparison(runner, plan, log));
  EXPECT_EQ(r.end, ComparisonEnd::kComplete);
  EXPECT_GT(r.pairs, 3);
  EXPECT_EQ(r.pairs % 3, 0);
  EXPECT_EQ(r.judged->verdict, Verdict::kKeep);
  ASSERT_FALSE(runner.progress.empty());
  EXPECT_EQ(runner.progress[0].rfind("  close validation inconclusive after 3 pairs (", 0), 0u) << runner.progress[0];
  // A candidate that is no better stops at max_pairs, INCONCLUSIVE or REVERT.
  exec_.adjust = nullptr;
  exec_.noise = 0.08;
  std::vector<std::string> at2, bt2;
  std::vector<double> av2, bv2;
  PairLog log2(at2, av2, bt2, bv2);
  ASSERT_OK_AND_ASSIGN(ComparisonResult same, RunComparison(runner, Plan("speed=same"), log2));
  EXPECT_LE(same.pairs, 9);
  EXPECT_NE(same.judged->verdict, Verdict::kKeep);
}

// A comparison killed between an A and its B resumes with the B alone; one killed
// after a look resumes at its next planned look (never past max_pairs).
TEST_F(ComparisonTest, ResumesAHalfPairAndTheNextLook) {
  FakeRunner runner(exec_);
  at = {"t0901"};
  av = {100};
  PairLog log(at, av, bt, bv);
  ASSERT_OK_AND_ASSIGN(ComparisonResult r, RunComparison(runner, Plan("speed=fast"), log));
  EXPECT_EQ(r.pairs, 3);
  EXPECT_EQ(Roles(), (std::vector<std::string>{"candidate", "incumbent", "candidate", "incumbent", "candidate"}));
  EXPECT_EQ(log.Interleaved()[0], "t0901");

  exec_.ran.clear();
  PairPlan plan = Plan("speed=same");
  plan.max_pairs = 8;  // looks at 3, 6, 8
  std::vector<std::string> at2(7, "x"), bt2(7, "y");
  std::vector<double> av2(7, 100.0), bv2(7, 100.0);
  PairLog log2(at2, av2, bt2, bv2);
  ASSERT_OK_AND_ASSIGN(ComparisonResult r2, RunComparison(runner, plan, log2));
  EXPECT_EQ(r2.pairs, 8);  // the next look after 7 pairs is at 8, not 9
  EXPECT_EQ(exec_.ran.size(), 2u);
}

TEST_F(ComparisonTest, TheBudgetEndsItAndOnlyWholePairsAreJudged) {
  FakeRunner runner(exec_);
  runner.budget_trials = 5;  // two pairs, and not enough for a third
  PairLog log(at, av, bt, bv);
  ASSERT_OK_AND_ASSIGN(ComparisonResult r, RunComparison(runner, Plan("speed=fast"), log));
  EXPECT_EQ(r.end, ComparisonEnd::kBudget);
  EXPECT_EQ(r.pairs, 2);
  EXPECT_FALSE(r.judged);
  Decision d = Decide(r, {});
  EXPECT_EQ(d.verdict, Verdict::kSkippedBudget);
  EXPECT_EQ(d.reason, "not enough budget left for paired trials");
  // After min_pairs, what was measured is judged (and said to be cut short).
  exec_.ran.clear();
  std::vector<std::string> at2, bt2;
  std::vector<double> av2, bv2;
  PairLog log2(at2, av2, bt2, bv2);
  exec_.adjust = [](const measure::TrialRequest& req, double v) { return req.id == "t0006" ? v * 0.7 : v; };
  runner.budget_trials = 8;
  ASSERT_OK_AND_ASSIGN(ComparisonResult r2, RunComparison(runner, Plan("speed=fast"), log2));
  EXPECT_EQ(r2.end, ComparisonEnd::kBudget);
  EXPECT_EQ(r2.pairs, 4);
  ASSERT_TRUE(r2.judged);
  EXPECT_EQ(r2.judged->pairs, 4);
  EXPECT_NE(Decide(r2, {}).reason.find(" (budget: no more pairs)"), std::string::npos);
}

TEST_F(ComparisonTest, AFailedTrialEndsItWithItsOutcome) {
  exec_.crashes = {{"speed=broken", "bad_flag"}};
  FakeRunner runner(exec_);
  PairLog log(at, av, bt, bv);
  ASSERT_OK_AND_ASSIGN(ComparisonResult r, RunComparison(runner, Plan("speed=broken"), log));
  EXPECT_EQ(r.end, ComparisonEnd::kFailedB);
  ASSERT_TRUE(r.failed);
  EXPECT_EQ(r.failed->failure_kind, "bad_flag");
  Decision d = Decide(r, {});
  EXPECT_EQ(d.verdict, Verdict::kLaunchFailed);
  EXPECT_EQ(d.reason, "bad_flag: fake bad_flag");
  // The incumbent failing says nothing about the candidate: INVALID, and its B never runs.
  exec_.ran.clear();
  exec_.invalid_trials = {"t0003"};
  std::vector<std::string> at2, bt2;
  std::vector<double> av2, bv2;
  PairLog log2(at2, av2, bt2, bv2);
  ASSERT_OK_AND_ASSIGN(ComparisonResult a, RunComparison(runner, Plan("speed=fast"), log2));
  EXPECT_EQ(a.end, ComparisonEnd::kFailedA);
  EXPECT_EQ(exec_.ran.back().id, "t0003");
  d = Decide(a, {});
  EXPECT_EQ(d.verdict, Verdict::kInvalid);
  EXPECT_EQ(d.reason, "the incumbent's trial t0003 failed (invalid run)");
}

TEST_F(ComparisonTest, AnSloViolationIsAVetoThatKeepsTheTrial) {
  FakeRunner runner(exec_);
  PairPlan plan = Plan("speed=fast");
  plan.slo_veto = true;
  exec_.adjust = [](const measure::TrialRequest&, double v) { return v; };
  // The fake marks no SLO; a runner wrapper does.
  class SloRunner final : public TrialRunner {
   public:
    explicit SloRunner(FakeRunner& inner) : inner_(inner) {}
    Result<measure::TrialOutcome> RunTrial(const Arm& arm, const measure::OperatingPoint& p) override {
      HONE_ASSIGN_OR_RETURN(measure::TrialOutcome o, inner_.RunTrial(arm, p));
      if (arm.role == TrialRole::kCandidate) {
        o.slo_ok = false;
        o.slo_violations = {"p99_ttft_ms = 900 violates p99_ttft_ms <= 500"};
      }
      return o;
    }
    bool CanAfford(int n) const override { return inner_.CanAfford(n); }
    Status Save() override { return inner_.Save(); }
    void Progress(const std::string& l) override { inner_.Progress(l); }

   private:
    FakeRunner& inner_;
  } slo(runner);
  PairLog log(at, av, bt, bv);
  ASSERT_OK_AND_ASSIGN(ComparisonResult r, RunComparison(slo, plan, log));
  EXPECT_EQ(r.end, ComparisonEnd::kSloViolated);
  EXPECT_EQ(bt.size(), 1u);  // the violating trial is evidence
  Decision d = Decide(r, {});
  EXPECT_EQ(d.verdict, Verdict::kRevert);
  EXPECT_EQ(d.reason, "SLO violated: p99_ttft_ms = 900 violates p99_ttft_ms <= 500");
}

// The A/A baseline: no verdict, a fixed number of pairs, a hook between A and B (the
// warm replay), failed trials retried when the caller says so.
TEST_F(ComparisonTest, AnAAComparisonRunsItsPairsWithHooks) {
  FakeRunner runner(exec_);
  PairPlan plan;
  plan.a = {TrialRole::kBaseline, Config{}, ""};
  plan.b = {TrialRole::kAa, Config{}, ""};
  plan.min_pairs = plan.max_pairs = 2;
  std::vector<std::string> order;
  plan.between = [&]() -> Status {
    HONE_ASSIGN_OR_RETURN(measure::TrialOutcome o, runner.RunTrial({TrialRole::kReplay, Config{}, ""}, plan.point));
    order.push_back("between " + o.id);
    return Ok();
  };
  plan.on_trial = [&](const measure::TrialOutcome& o, bool b_arm) { order.push_back((b_arm ? "B " : "A ") + o.id); };
  int retries = 0;
  plan.retry = [&](const measure::TrialOutcome&) { return ++retries <= 1; };
  exec_.invalid_trials = {"t0003"};  // the first aa trial: retried once
  PairLog log(at, av, bt, bv);
  ASSERT_OK_AND_ASSIGN(ComparisonResult r, RunComparison(runner, plan, log));
  EXPECT_EQ(r.end, ComparisonEnd::kComplete);
  EXPECT_FALSE(r.judged);
  EXPECT_EQ(r.pairs, 2);
  EXPECT_EQ(order, (std::vector<std::string>{"A t0001", "between t0002", "between t0004", "B t0005", "A t0006",
                                             "between t0007", "B t0008"}));
  EXPECT_EQ(retries, 1);
}

// B / A per whole pair: a half pair and a non-positive A are left out.
TEST(PairLogTest, RatiosAreOfWholePairsWithAPositiveA) {
  std::vector<std::string> at{"t1", "t3", "t5", "t7"}, bt{"t2", "t4", "t6"};
  std::vector<double> av{100, 0, 50, 80}, bv{110, 90, 40};
  PairLog log(at, av, bt, bv);
  ASSERT_EQ(log.pairs(), 3);
  EXPECT_EQ(log.Ratios(), (std::vector<double>{1.1, 0.8}));
}

TEST(DecideTest, VetoesOnlyMakeTheOutcomeMoreConservative) {
  ComparisonResult keep;
  keep.judged = measure::VerdictResult{};
  keep.judged->verdict = Verdict::kKeep;
  keep.judged->reason = "gain +20%";
  ComparisonResult revert = keep;
  revert.judged->verdict = Verdict::kRevert;
  ComparisonResult undecided = keep;
  undecided.judged->verdict = Verdict::kInconclusive;

  // The critic can turn a KEEP down, and nothing else up.
  Decision d = Decide(keep, {{VetoKind::kCritic, "gain suspicious"}});
  EXPECT_EQ(d.verdict, Verdict::kRevert);
  EXPECT_EQ(d.reason, "measured KEEP (gain +20%) but the critic refused: gain suspicious");
  EXPECT_EQ(Decide(revert, {{VetoKind::kCritic, "no"}}).verdict, Verdict::kRevert);
  EXPECT_EQ(Decide(undecided, {{VetoKind::kCritic, "no"}}).verdict, Verdict::kInconclusive);
  EXPECT_EQ(Decide(keep, {}).verdict, Verdict::kKeep);
  EXPECT_EQ(Decide(keep, {}).reason, "gain +20%");
  // The same for a patch the lane did not commit.
  EXPECT_EQ(Decide(keep, {{VetoKind::kNotCommitted, "merge denied"}}).reason, "patch not committed: merge denied");
  EXPECT_EQ(Decide(revert, {{VetoKind::kNotCommitted, "merge denied"}}).verdict, Verdict::kRevert);
  // Accuracy, SLO: always vetoes, worded for when they were found.
  d = Decide(keep, {{VetoKind::kAccuracy, "token agreement 50%"}});
  EXPECT_EQ(d.verdict, Verdict::kAccuracyFailed);
  EXPECT_EQ(d.reason, "faster but the accuracy gate failed: token agreement 50%");
  d = Decide(std::nullopt, {{VetoKind::kAccuracy, "token agreement 50%"}});
  EXPECT_EQ(d.reason, "accuracy gate: token agreement 50%");
  EXPECT_EQ(Decide(keep, {{VetoKind::kSloViolated, "ttft"}}).verdict, Verdict::kRevert);
  // Before any pair: the veto decides.
  EXPECT_EQ(Decide(std::nullopt, {{VetoKind::kScreenDrop, "40% worse"}}).verdict, Verdict::kScreenedOut);
  EXPECT_EQ(Decide(std::nullopt, {{VetoKind::kBudget, "no budget"}}).verdict, Verdict::kSkippedBudget);
  EXPECT_EQ(Decide(std::nullopt, {{VetoKind::kBuildFailed, "compile error"}}).verdict, Verdict::kBuildFailed);
  EXPECT_EQ(Decide(std::nullopt, {{VetoKind::kPatchRejected, "too big"}}).verdict, Verdict::kPatchRejected);
  EXPECT_EQ(Decide(std::nullopt, {{VetoKind::kPatchFailed, "git"}}).verdict, Verdict::kPatchFailed);
  EXPECT_EQ(Decide(std::nullopt, {{VetoKind::kInterrupted, "cut"}}).verdict, Verdict::kInconclusive);
  // The first veto that applies decides.
  d = Decide(keep, {{VetoKind::kCritic, "c"}, {VetoKind::kAccuracy, "a"}});
  EXPECT_EQ(d.verdict, Verdict::kRevert);
  d = Decide(revert, {{VetoKind::kCritic, "c"}, {VetoKind::kAccuracy, "a"}});
  EXPECT_EQ(d.verdict, Verdict::kAccuracyFailed);
}

TEST(DecideTest, AFailedTrialCarriesItsOwnVeto) {
  measure::TrialOutcome o;
  o.id = "t0001";
  o.failure_kind = "out_of_memory";
  o.failure_detail = std::string(300, 'x');
  Veto v = TrialVeto(o);
  EXPECT_EQ(v.kind, VetoKind::kLaunchFailed);
  EXPECT_EQ(v.reason, "out_of_memory: " + std::string(200, 'x'));
  o.launched = true;
  v = TrialVeto(o);
  EXPECT_EQ(v.kind, VetoKind::kInvalidRun);
  EXPECT_EQ(v.reason, "invalid run");
  o.faults = {"connection_reset x2"};
  o.retry_of = "t0000";
  v = TrialVeto(o);
  EXPECT_EQ(v.kind, VetoKind::kFaulted);
  EXPECT_EQ(v.reason, "t0001 (measured again after t0000): connection_reset x2");
  EXPECT_EQ(Decide(std::nullopt, {v}).verdict, Verdict::kInvalid);
  o.faults.clear();
  o.valid = true;
  o.slo_ok = false;
  EXPECT_EQ(TrialVeto(o).kind, VetoKind::kSloViolated);
}

// A faulted trial (its server or the transport misbehaved; the ledger already measured
// it once more) is never a value of the comparison: its bogus objective, ten times the
// real one, ends the comparison, and Decide makes the candidate INVALID, not a KEEP.
TEST_F(ComparisonTest, AFaultedTrialEndsTheComparisonAndIsNeverKept) {
  FakeRunner runner(exec_);
  exec_.fault_if = [](const measure::TrialRequest& r) { return r.role == TrialRole::kCandidate && r.id == "t0004"; };
  PairLog log(at, av, bt, bv);
  ASSERT_OK_AND_ASSIGN(ComparisonResult r, RunComparison(runner, Plan("speed=same"), log));
  EXPECT_EQ(r.end, ComparisonEnd::kFailedB);
  ASSERT_TRUE(r.failed.has_value());
  EXPECT_EQ(r.failed->id, "t0004");
  EXPECT_EQ(log.pairs(), 1);
  for (double v : bv) EXPECT_LT(v, 200);
  Decision d = Decide(r, {});
  EXPECT_EQ(d.verdict, Verdict::kInvalid);
  EXPECT_EQ(d.reason, "faulted: t0004: connection_reset x3");
}

// The screen's reference: the latest `keep` incumbent trials; a trial more than the
// tolerance off their mean restarts it (the host moved); ids follow the values.
TEST(ScreenReferenceTest, AFreshTrialReplacesTheOldestOrRestartsAMovedReference) {
  std::vector<double> v = {100, 102, 98};
  std::vector<std::string> ids = {"t1", "t2", "t3"};
  AddToScreenReference(v, &ids, 101, "t9", 3, 0.10, true);
  EXPECT_EQ(v, (std::vector<double>{102, 98, 101}));
  EXPECT_EQ(ids, (std::vector<std::string>{"t2", "t3", "t9"}));
  AddToScreenReference(v, &ids, 85, "t10", 3, 0.10, true);  // 15% below: the host slowed
  EXPECT_EQ(v, (std::vector<double>{85}));
  EXPECT_EQ(ids, (std::vector<std::string>{"t10"}));
  AddToScreenReference(v, &ids, 86, "t11", 3, 0.10, true);  // grows back to `keep`
  AddToScreenReference(v, &ids, 84, "t12", 3, 0.10, true);
  AddToScreenReference(v, &ids, 85, "t13", 3, 0.10, true);
  EXPECT_EQ(v, (std::vector<double>{86, 84, 85}));
  EXPECT_EQ(ids.front(), "t11");
  // A latency (minimize): 20% higher is 1/1.2 - 1 = -17% better, beyond 10%.
  std::vector<double> lat = {10, 10};
  AddToScreenReference(lat, nullptr, 12, "", 2, 0.10, false);
  EXPECT_EQ(lat, (std::vector<double>{12}));
  AddToScreenReference(lat, nullptr, 12.5, "", 2, 0.10, false);
  EXPECT_EQ(lat, (std::vector<double>{12, 12.5}));
}

}  // namespace
}  // namespace hone::session
