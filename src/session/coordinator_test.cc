#include "session/coordinator.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include "core/stats.h"
#include "measure/verdict.h"
#include "search/heuristics.h"
#include "testing/fake_executor.h"
#include "sys/files.h"
#include "sys/signals.h"
#include "testing/fake_clock.h"
#include "testing/test_util.h"

namespace hone::session {
namespace {

class RecordingCloser final : public Closer {
 public:
  Status Close(SessionState& s) override {
    ++calls;
    last_reason = s.stop_reason;
    return Ok();
  }
  int calls = 0;
  std::string last_reason;
};

spec::SessionSpec Spec(double budget_s = 3600) {
  spec::SessionSpec s;
  s.name = "t";
  s.target.model.path = "/m.gguf";
  s.budget.wall_s = budget_s;
  s.budget.max_cycles = 3;
  s.measurement.min_pairs = 3;
  s.measurement.max_pairs = 9;
  s.measurement.pair_step = 3;
  s.measurement.aa_pairs = 2;
  return s;
}

class CoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-coord");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    exec_.clock = &clock_;
    exec_.run_dir = dir_->path().string();
  }
  SessionState Run(const spec::SessionSpec& spec, search::Proposer* proposer, SessionState* resume = nullptr) {
    SessionServices svc;
    svc.executor = &exec_;
    svc.proposer = proposer;
    svc.clock = &clock_;
    svc.closer = &closer_;
    svc.risky = [](const Config& d) { return d.Has("weights"); };
    svc.enablement = [](const std::string& kind) {
      return kind == "out_of_memory" ? std::vector<Config>{Config{{"ctx", "big"}}, Config{{"ctx", "small"}}}
                                     : std::vector<Config>{};
    };
    svc.point_variants = point_variants_;
    SessionState s = resume ? *resume : Coordinator::NewState(spec, dir_->path().string(), clock_);
    Coordinator c(spec, svc, s);
    auto out = c.Run();
    EXPECT_TRUE(out) << out.error().ToString();
    return out ? *out : SessionState{};
  }
  // A one-cycle session at `concurrency` whose roofline names `bound` (at `ratio` of it),
  // with `p` as the search; the session's end state.
  Result<SessionState> RunWithRoofline(search::Proposer& p, int concurrency, double ratio, const std::string& bound) {
    SessionServices svc;
    svc.executor = &exec_;
    svc.proposer = &p;
    svc.clock = &clock_;
    svc.roofline = [=](const Config&, double, double) -> Result<RooflineNote> {
      return RooflineNote{bound + " bound", ratio, false, bound};
    };
    spec::SessionSpec spec = Spec();
    spec.budget.max_cycles = 1;
    spec.workload.concurrency = concurrency;
    Coordinator c(spec, svc, Coordinator::NewState(spec, dir_->path().string(), clock_));
    return c.Run();
  }
  // A session in a child process that dies (_exit(0), like a kill -9) somewhere inside
  // it; what it left on disk.
  SessionState RunDyingChild(const spec::SessionSpec& spec, const std::vector<std::string>& ideas,
                             KernelLane* kernel = nullptr) {
    pid_t child = fork();
    EXPECT_GE(child, 0);
    if (child == 0) {
      ListProposer p(ideas);
      SessionServices svc;
      svc.executor = &exec_;
      svc.proposer = &p;
      svc.clock = &clock_;
      svc.kernel = kernel;
      Coordinator c(spec, svc, Coordinator::NewState(spec, dir_->path().string(), clock_));
      (void)c.Run();
      _exit(1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child was to die inside its session";
    auto loaded = LoadState(dir_->path().string());
    EXPECT_TRUE(loaded) << loaded.error().ToString();
    return loaded ? *loaded : SessionState{};
  }
  // A one-cycle session proposing a=1 (x a_factor), then a sweep over c1 and c4 whose
  // re-tuning sets slots=<concurrency>; slots=4 is x slots_factor at c4 only.
  spec::SessionSpec SweepSpec() {
    spec::SessionSpec spec = Spec();
    spec.budget.max_cycles = 1;
    spec.workload.sweep_concurrency = {1, 4};
    spec.workload.sweep_isl_osl = {{64, 16}};
    return spec;
  }
  SessionState RunSlotsSweep(const spec::SessionSpec& spec, double a_factor, double slots_factor) {
    exec_.factors = {{"a=1", a_factor}};
    exec_.adjust = [slots_factor](const measure::TrialRequest& r, double v) {
      return r.point.concurrency == 4 && r.config.Get("slots") == "4" ? v * slots_factor : v;
    };
    point_variants_ = [](const Config& c, const measure::OperatingPoint& p) {
      Config v = c;
      v.Set("slots", std::to_string(p.concurrency));
      return std::vector<Config>{v};
    };
    ListProposer p({"a=1"});
    return Run(spec, &p);
  }
  std::vector<std::string> PhaseOrder(const SessionState& s) {
    std::vector<std::string> out;
    for (const auto& p : s.phases) out.push_back(std::string(PhaseName(p.phase)) + ":" + std::string(PhaseStatusName(p.status)));
    return out;
  }

  testing::FakeClock clock_;
  FakeExecutor exec_;
  RecordingCloser closer_;
  std::function<std::vector<Config>(const Config&, const measure::OperatingPoint&)> point_variants_;
  std::unique_ptr<sys::TempDir> dir_;
};

// The host slows by 15% once the search starts (the CI demo's drift): against the
// baseline's mean every no-op change looks 15% worse. After two screen drops in a row the
// third drop measures the incumbent again: it ran as slow, so the reference restarts from
// that trial and the change goes on to its pairs, and the next change passes the screen.
// With measurement.screen_recheck 0 every change is screened out.
TEST_F(CoordinatorTest, ScreenDropsInARowReMeasureTheIncumbentAndADriftedHostIsNoLoser) {
  for (int recheck : {2, 0}) {
    SCOPED_TRACE(recheck);
    auto d = sys::TempDir::Create("hone-coord-recheck");
    ASSERT_TRUE(d);
    exec_.run_dir = d->get()->path().string();
    bool drifted = false;
    exec_.adjust = [&drifted](const measure::TrialRequest& r, double v) {
      if (r.role == measure::TrialRole::kScreen) drifted = true;
      return drifted ? v * 0.85 : v;
    };
    ListProposer p({"n=1", "n=2", "n=3", "n=4"});
    spec::SessionSpec spec = Spec();
    spec.budget.max_cycles = 1;
    spec.measurement.screen_recheck = recheck;
    SessionServices svc;
    svc.executor = &exec_;
    svc.proposer = &p;
    svc.clock = &clock_;
    Coordinator c(spec, svc, Coordinator::NewState(spec, d->get()->path().string(), clock_));
    auto out = c.Run();
    ASSERT_TRUE(out) << out.error().ToString();
    const SessionState& s = *out;
    ASSERT_GE(s.candidates.size(), 4u);
    EXPECT_EQ(s.candidates[0].verdict, Verdict::kScreenedOut);
    EXPECT_EQ(s.candidates[1].verdict, Verdict::kScreenedOut);
    if (recheck == 0) {
      for (size_t i = 0; i < 4; ++i) EXPECT_EQ(s.candidates[i].verdict, Verdict::kScreenedOut) << i;
      for (const auto& cand : s.candidates) EXPECT_TRUE(cand.recheck_trial.empty());
      continue;
    }
    const CandidateRecord& third = s.candidates[2];
    ASSERT_FALSE(third.recheck_trial.empty());
    EXPECT_NE(third.verdict, Verdict::kScreenedOut) << third.reason;
    EXPECT_FALSE(third.incumbent_trials.empty()) << "it went on to its pairs";
    EXPECT_NE(s.candidates[3].verdict, Verdict::kScreenedOut) << s.candidates[3].reason;
    EXPECT_TRUE(s.candidates[3].recheck_trial.empty()) << "the reference is fresh: no re-check";
    // The host moved by 15% (more than the 10% drop): the reference restarted from the
    // re-check's trial; its id is the incumbent's latest measurement.
    ASSERT_FALSE(s.best_trials.empty());
    EXPECT_EQ(s.best_trials.front(), third.recheck_trial);
    EXPECT_NEAR(s.best_values.front(), 85, 2);
    EXPECT_LE(s.best_values.size(), s.baseline_values.size() + s.aa_values.size()) << "no KEEP: the baseline's count";
    // Resumable: the counters survive the state file.
    auto loaded = LoadState(d->get()->path().string());
    ASSERT_TRUE(loaded) << loaded.error().ToString();
    EXPECT_EQ(loaded->candidates[2].recheck_trial, third.recheck_trial);
    EXPECT_EQ(loaded->best_values, s.best_values);
    EXPECT_EQ(loaded->best_trials, s.best_trials);
    EXPECT_EQ(loaded->screen_drops_in_row, s.screen_drops_in_row);
    const std::string events = sys::ReadFile(d->get()->path().string() + "/events.jsonl").value_or("");
    EXPECT_NE(events.find("screen_recheck"), std::string::npos);
  }
}

TEST_F(CoordinatorTest, HappyPathKeepsTheGainAndValidatesIt) {
  exec_.factors = {{"speed=fast", 1.20}, {"speed=slow", 0.6}, {"flag=x", 1.0}};
  ListProposer p({"speed=slow", "flag=x", "speed=fast"});
  SessionState s = Run(Spec(), &p);
  EXPECT_EQ(s.phase, session::Phase::kDone);
  EXPECT_EQ(s.best.ToString(), "speed=fast");
  ASSERT_EQ(s.candidates.size(), 3u);
  EXPECT_EQ(s.candidates[0].verdict, Verdict::kScreenedOut);  // 40% slower: one trial
  EXPECT_EQ(s.candidates[0].candidate_trials.size(), 0u);
  EXPECT_EQ(s.candidates[1].verdict, Verdict::kRevert);
  EXPECT_EQ(s.candidates[2].verdict, Verdict::kKeep);
  EXPECT_NEAR(s.candidates[2].gain, 0.20, 0.02);
  EXPECT_EQ(s.candidates[2].incumbent_trials.size(), 3u);
  EXPECT_TRUE(s.validated);
  EXPECT_NEAR(s.validated_gain, 0.20, 0.02);
  EXPECT_GT(s.validated_lo, 1.1);
  EXPECT_EQ(s.validation_verdict, Verdict::kKeep);
  EXPECT_EQ(s.validation_trials.size(), 6u);
  EXPECT_NEAR(s.baseline_objective, 100, 2);
  EXPECT_EQ(s.baseline_trials.size(), 2u);
  EXPECT_EQ(closer_.calls, 1);
  // Prelude, framework, kernel (skipped), sweep (skipped), cycle 2 framework (no
  // ideas), kernel, sweep, then close: the second cycle found nothing.
  auto phases = PhaseOrder(s);
  ASSERT_GE(phases.size(), 5u);
  EXPECT_EQ(phases[0], "prelude:done");
  EXPECT_EQ(phases[1], "framework:done");
  EXPECT_EQ(phases[2], "kernel:skipped");
  EXPECT_EQ(phases[3], "sweep:skipped");
  EXPECT_EQ(phases.back(), "close:done");
  EXPECT_EQ(s.stop_reason, "converged: the last cycle found no gain");
  EXPECT_EQ(s.cycle, 2);
  // State and events are on disk, and the state round-trips.
  auto loaded = LoadState(dir_->path().string());
  ASSERT_OK(loaded);
  EXPECT_EQ(loaded->best, s.best);
  auto events = ReadEvents((dir_->path() / "events.jsonl").string());
  ASSERT_OK(events);
  EXPECT_EQ(events->front().type, "session_started");
  int verdicts = 0;
  for (const auto& e : *events) verdicts += e.type == "verdict";
  EXPECT_EQ(verdicts, 3);
  // Every trial has its directory with an outcome.
  for (const auto& t : exec_.ran) EXPECT_TRUE(sys::FileExists(dir_->path() / "trials" / t.id / "outcome.json"));
}

// Proposes its ideas in order, each once, whether or not measured before (a planner's
// re-test of an INCONCLUSIVE value).
class RepeatProposer final : public search::Proposer {
 public:
  explicit RepeatProposer(std::vector<std::string> ideas) : ideas_(std::move(ideas)) {}
  std::optional<search::Candidate> Next(const search::ProposalContext&) override {
    if (next_ >= ideas_.size()) return std::nullopt;
    const std::string idea = ideas_[next_++];
    const size_t eq = idea.find('=');
    return search::Candidate{idea, idea, Config{{idea.substr(0, eq), idea.substr(eq + 1)}}, "test idea", 0};
  }
  void Observe(const search::Observation& obs) override { gains.push_back(obs.gain); }
  std::string Save() const override { return std::to_string(next_); }
  Status Load(const std::string& s) override {
    next_ = static_cast<size_t>(ParseInt(s).value_or(0));
    return Ok();
  }
  std::string Describe() const override { return "repeat"; }
  std::vector<double> gains;

 private:
  std::vector<std::string> ideas_;
  size_t next_ = 0;
};

// A re-test of an INCONCLUSIVE candidate against the same incumbent continues its
// comparison: judged on both candidates' pairs, Bonferroni over all their looks. Here
// each comparison's candidate trials measure +0%, +40%, +0%, ... (4 of 9 at +40%): nine
// pairs cannot prove the gain (t interval across 1), fifteen pooled ones can; without
// pooling each comparison stands alone and the re-test is INCONCLUSIVE again.
TEST_F(CoordinatorTest, ARetestPoolsThePairsOfItsInconclusiveLooks) {
  for (bool pool : {true, false}) {
    SCOPED_TRACE(pool ? "pool_retests: true" : "pool_retests: false");
    SetUp();
    exec_.noise = 0;
    int b_trials = 0;
    exec_.adjust = [&b_trials](const measure::TrialRequest& r, double v) {
      if (r.role != measure::TrialRole::kCandidate || r.config.Get("speed") != "fast") return v;
      return v * ((b_trials++ % 9) % 2 == 1 ? 1.4 : 1.0);
    };
    spec::SessionSpec spec = Spec();
    spec.budget.max_cycles = 1;
    spec.measurement.screen = false;
    spec.measurement.pool_retests = pool;
    RepeatProposer p({"speed=fast", "speed=fast"});
    SessionState s = Run(spec, &p);
    ASSERT_EQ(s.candidates.size(), 2u);
    const CandidateRecord& first = s.candidates[0];
    const CandidateRecord& again = s.candidates[1];
    EXPECT_EQ(first.verdict, Verdict::kInconclusive) << first.reason;
    EXPECT_EQ(first.pairs, 9);
    EXPECT_TRUE(first.pooled_with.empty());
    if (pool) {
      EXPECT_EQ(again.verdict, Verdict::kKeep) << again.reason;
      EXPECT_EQ(again.pooled_with, std::vector<std::string>{first.id});
      EXPECT_GE(again.pairs, 12);  // the first's 9 and at least its own 3
      EXPECT_EQ(again.pairs, 9 + static_cast<int>(again.candidate_values.size()));
      EXPECT_TRUE(again.reason.starts_with("with " + first.id + "'s pairs, ")) << again.reason;
      // Saved with the state: a resumed session pools the same pairs.
      auto loaded = LoadState(dir_->path().string());
      ASSERT_OK(loaded);
      EXPECT_EQ(loaded->candidates[1].pooled_with, again.pooled_with);
    } else {
      EXPECT_EQ(again.verdict, Verdict::kInconclusive) << again.reason;
      EXPECT_TRUE(again.pooled_with.empty());
      EXPECT_EQ(again.pairs, 9);
    }
  }
}

// The framework phase ends after search.plateau candidates in a row without a KEEP;
// with 0 it runs until the proposer has nothing left (or the budget ends it). A session
// whose cycle found no gain because the plateau ended its search says so: the stop
// reason names the plateau (the demo of 2026-12-06 read "converged: the last cycle found
// no gain" after 8 of its ideas, with more open); a proposer that ran dry reads
// "converged".
TEST_F(CoordinatorTest, ThePlateauIsTheSpecsAndZeroSpendsTheIdeas) {
  std::vector<std::string> ideas;
  for (int i = 0; i < 6; ++i) {
    ideas.push_back("n" + std::to_string(i) + "=1");
    exec_.factors["n" + std::to_string(i) + "=1"] = 0.95;  // every one a REVERT
  }
  auto framework_note = [](const SessionState& s) {
    for (const auto& ph : s.phases) {
      if (ph.phase == Phase::kFramework) return ph.note;
    }
    return std::string();
  };
  spec::SessionSpec spec = Spec();
  spec.budget.max_cycles = 3;  // no gain ends the session after its first cycle
  spec.search.plateau = 3;
  ListProposer three(ideas);
  SessionState s = Run(spec, &three);
  EXPECT_EQ(s.candidates.size(), 3u);
  EXPECT_EQ(framework_note(s), "plateau: 3 candidates without a KEEP");
  EXPECT_EQ(s.stop_reason, "plateau: 3 candidates without a KEEP (the last cycle found no gain)");
  auto fresh = sys::TempDir::Create("hone-coord");  // a second session, its own directory
  ASSERT_TRUE(fresh);
  dir_ = std::move(*fresh);
  exec_.run_dir = dir_->path().string();
  spec.search.plateau = 0;
  ListProposer all(ideas);
  SessionState t = Run(spec, &all);
  EXPECT_EQ(t.candidates.size(), 6u);
  EXPECT_EQ(framework_note(t), "no more ideas");
  EXPECT_EQ(t.stop_reason, "converged: the last cycle found no gain");
}

// A noisy machine gets at most two more A/A pairs than asked for; then the floor is
// fixed and the search goes on. (The cap once moved with every extra pair, and a host
// whose A/A pairs kept differing by more than 10% spent its whole budget on them.)
TEST_F(CoordinatorTest, ANoisyHostGetsAtMostTwoExtraAAPairs) {
  exec_.factors = {{"speed=fast", 1.5}};
  exec_.adjust = [](const measure::TrialRequest& req, double v) { return req.role == measure::TrialRole::kAa ? v * 1.3 : v; };
  ListProposer p({"speed=fast"});
  spec::SessionSpec spec = Spec();
  SessionState s = Run(spec, &p);
  EXPECT_EQ(s.aa_trials.size(), static_cast<size_t>(spec.measurement.aa_pairs + 2));
  EXPECT_EQ(s.baseline_trials.size(), s.aa_trials.size());
  EXPECT_GT(s.noise_floor, 0.10);
  ASSERT_EQ(s.candidates.size(), 1u);  // the search still ran
  EXPECT_NE(s.candidates[0].verdict, Verdict::kPending);
}

// One failed stock trial in the prelude (a busy host) is measured again; a second
// failure ends the session with the reason.
TEST_F(CoordinatorTest, AFailedStockTrialIsRetriedOnce) {
  exec_.factors = {{"speed=fast", 1.2}};
  exec_.invalid_trials = {"t0003"};  // the first A/A trial
  ListProposer p({"speed=fast"});
  SessionState s = Run(Spec(), &p);
  EXPECT_EQ(s.aa_trials.size(), 2u);
  EXPECT_EQ(std::find(s.aa_trials.begin(), s.aa_trials.end(), "t0003"), s.aa_trials.end());
  ASSERT_EQ(s.candidates.size(), 1u);
  EXPECT_EQ(s.candidates[0].verdict, Verdict::kKeep);

  auto d = sys::TempDir::Create("hone-coord");
  ASSERT_TRUE(d);
  dir_ = std::move(*d);
  exec_.run_dir = dir_->path().string();
  exec_.invalid_trials = {"t0003", "t0004"};
  ListProposer q({"speed=fast"});
  SessionState t = Run(Spec(), &q);
  EXPECT_NE(t.stop_reason.find("the stock configuration's trial t0004 failed: fake: a request timed out"),
            std::string::npos)
      << t.stop_reason;
  EXPECT_TRUE(t.candidates.empty());
}

// A faulted trial (its server misbehaved) is measured again once and never enters a
// verdict: here every candidate trial's first attempt comes back faulted with a bogus
// value ten times the real one, and no KEEP follows from it. A second fault leaves
// the candidate INVALID, and the session still closes.
TEST_F(CoordinatorTest, FaultedTrialsAreRetriedOnceAndNeverKept) {
  exec_.fault_if = [](const measure::TrialRequest& r) { return r.role == measure::TrialRole::kCandidate && r.retry_of.empty(); };
  ListProposer p({"speed=same"});
  SessionState s = Run(Spec(), &p);
  ASSERT_EQ(s.candidates.size(), 1u);
  const CandidateRecord& c = s.candidates[0];
  EXPECT_NE(c.verdict, Verdict::kKeep) << c.reason;
  ASSERT_FALSE(c.candidate_trials.empty());
  for (double v : c.candidate_values) EXPECT_LT(v, 200);  // never the faulted value
  for (const std::string& id : c.candidate_trials) {
    auto t = measure::ReadTrialOutcome((dir_->path() / "trials" / id).string());
    ASSERT_TRUE(t);
    EXPECT_FALSE(t->retry_of.empty()) << id << " is not the re-measurement of a faulted trial";
    EXPECT_TRUE(t->valid);
  }
  auto events = ReadEvents((dir_->path() / "events.jsonl").string());
  ASSERT_TRUE(events);
  int retries = 0;
  for (const auto& e : *events) retries += e.type == "trial_retry";
  EXPECT_EQ(static_cast<size_t>(retries), c.candidate_trials.size() + (c.screen_trial.empty() ? 0 : 0));
  EXPECT_EQ(closer_.calls, 1);

  auto d = sys::TempDir::Create("hone-coord");
  ASSERT_TRUE(d);
  dir_ = std::move(*d);
  exec_.run_dir = dir_->path().string();
  exec_.fault_if = [](const measure::TrialRequest& r) { return r.role == measure::TrialRole::kCandidate; };
  exec_.factors = {{"speed=fast", 1.5}};
  ListProposer q({"speed=fast"});
  SessionState t = Run(Spec(), &q);
  ASSERT_EQ(t.candidates.size(), 1u);
  EXPECT_EQ(t.candidates[0].verdict, Verdict::kInvalid);
  EXPECT_NE(t.candidates[0].reason.find("faulted"), std::string::npos) << t.candidates[0].reason;
  EXPECT_TRUE(t.BestIsStock());
  EXPECT_EQ(closer_.calls, 2);
  // A fault says nothing about the configuration: the proposer is not told it failed.
  ASSERT_EQ(q.observations.size(), 1u);
  EXPECT_FALSE(q.observations[0].no_valid_run());
  EXPECT_EQ(t.candidates[0].failure_kind, "");
}

// A configuration whose own run serves nothing valid (a stalled server) is INVALID, and
// its record and the proposer's observation say so ("invalid: <reason>"): the search
// learns it as a failure of the configuration (TPE, tpe.cc), unlike a fault or a failed
// incumbent trial.
TEST_F(CoordinatorTest, AConfigurationThatStallsTheServerIsReportedToTheSearchAsItsFailure) {
  exec_.stalls = {"speed=stall"};
  exec_.factors = {{"speed=fast", 1.5}};
  ListProposer p({"speed=stall", "speed=fast"});
  SessionState s = Run(Spec(), &p);
  ASSERT_EQ(s.candidates.size(), 2u);
  EXPECT_EQ(s.candidates[0].verdict, Verdict::kInvalid);
  EXPECT_EQ(s.candidates[0].failure_kind, "invalid: no token arrived inside the measurement window");
  ASSERT_EQ(p.observations.size(), 2u);
  EXPECT_TRUE(p.observations[0].no_valid_run());
  EXPECT_EQ(s.candidates[1].verdict, Verdict::kKeep) << s.candidates[1].reason;
  EXPECT_FALSE(p.observations[1].no_valid_run());
}

// A full disk under the run directory stops the session with the error (it is not a
// failed phase, and the session is not closed as if converged); once there is room,
// the resumed session finishes with the same verdict.
TEST_F(CoordinatorTest, AFullDiskStopsTheSessionToBeResumed) {
  exec_.factors = {{"speed=fast", 1.3}};
  bool full = true;
  exec_.error_if = [&](const measure::TrialRequest& r) -> std::optional<Error> {
    if (!full || r.role != measure::TrialRole::kCandidate) return std::nullopt;
    return Error{ErrorCode::kResourceExhausted, "cannot write outcome.json: No space left on device",
                 {{"no_space", "true"}}};
  };
  ListProposer p({"speed=fast"});
  SessionServices svc;
  svc.executor = &exec_;
  svc.proposer = &p;
  svc.clock = &clock_;
  svc.closer = &closer_;
  spec::SessionSpec spec = Spec();
  Coordinator c(spec, svc, Coordinator::NewState(spec, dir_->path().string(), clock_));
  auto out = c.Run();
  ASSERT_FALSE(out);
  EXPECT_TRUE(sys::IsNoSpace(out.error()));
  EXPECT_EQ(closer_.calls, 0);
  ASSERT_OK_AND_ASSIGN(SessionState saved, LoadState(dir_->path().string()));
  EXPECT_NE(saved.phase, Phase::kDone);
  full = false;
  ListProposer q({"speed=fast"});
  SessionState s = Run(spec, &q, &saved);
  EXPECT_EQ(s.phase, Phase::kDone);
  ASSERT_EQ(s.candidates.size(), 1u);
  EXPECT_EQ(s.candidates[0].verdict, Verdict::kKeep);
}

// Close validation is sequential: a burst of noise in its first pairs leaves the
// verdict inconclusive, so it measures more pairs (up to max_pairs) instead of
// giving up on a real gain after min_pairs.
TEST_F(CoordinatorTest, CloseValidationAddsPairsWhileInconclusive) {
  exec_.factors = {{"speed=fast", 1.20}};
  int validate_b = 0;
  const std::vector<double> burst = {1.6, 0.85, 1.35};  // the best's first three validation trials
  exec_.adjust = [&](const measure::TrialRequest& req, double v) {
    if (req.role != measure::TrialRole::kValidate || !req.config.Has("speed")) return v;
    int k = validate_b++;
    return k < static_cast<int>(burst.size()) ? v * burst[static_cast<size_t>(k)] : v;
  };
  ListProposer p({"speed=fast"});
  SessionState s = Run(Spec(), &p);
  ASSERT_EQ(s.candidates.size(), 1u);
  EXPECT_EQ(s.candidates[0].verdict, Verdict::kKeep);
  EXPECT_TRUE(s.validated);
  EXPECT_EQ(s.validation_verdict, Verdict::kKeep);
  EXPECT_GT(s.validation_trials.size(), 6u);   // more than min_pairs pairs
  EXPECT_LE(s.validation_trials.size(), 18u);  // never more than max_pairs
  EXPECT_EQ(s.validation_trials.size() % 2, 0u);
  EXPECT_GT(s.validated_lo, 1.0);
  // Without the extension the same three pairs are inconclusive.
  std::vector<double> a, b;
  for (const auto& id : s.validation_trials) {
    auto o = measure::ReadTrialOutcome(dir_->path().string() + "/trials/" + id);
    ASSERT_TRUE(o) << id;
    (o->config.Has("speed") ? b : a).push_back(o->objective);
  }
  a.resize(3);
  b.resize(3);
  measure::VerdictInput in{a, b, true, Spec().measurement.min_gain, s.noise_floor, Spec().measurement.confidence};
  in.looks = 3;
  EXPECT_EQ(measure::Judge(in).verdict, Verdict::kInconclusive);
}

TEST_F(CoordinatorTest, BudgetIsHard) {
  exec_.factors = {{"a=1", 1.1}};
  std::vector<std::string> ideas;
  for (int i = 0; i < 50; ++i) ideas.push_back("k" + std::to_string(i) + "=v");
  ListProposer p(ideas);
  int64_t start = clock_.WallMicros();
  SessionState s = Run(Spec(400), &p);
  double used = static_cast<double>(clock_.WallMicros() - start) * 1e-6;
  EXPECT_LE(used, 400 * 1.02) << "used " << used << " s of a 400 s budget";
  EXPECT_EQ(s.phase, session::Phase::kDone);
  EXPECT_EQ(s.stop_reason, "budget");
  EXPECT_EQ(closer_.calls, 1);
}

// A search that stops for its share of the budget (the sweep's reserve held back) with
// ideas still open has not converged, even when the sweep, with nothing kept, spends
// nothing and the cycle's end could still afford a candidate (the demo of 2026-12-05
// read "converged: the last cycle found no gain" after 3 of its 18 ideas).
TEST_F(CoordinatorTest, ASearchCutByItsBudgetShareStopsForTheBudgetNotConvergence) {
  std::vector<std::string> ideas;
  for (int i = 0; i < 50; ++i) ideas.push_back("k" + std::to_string(i) + "=v");  // all neutral
  ListProposer p(ideas);
  spec::SessionSpec spec = Spec(400);
  spec.workload.sweep_concurrency = {1, 4, 16};  // a reserve of 18 trials: more than a candidate's 7
  SessionState s = Run(spec, &p);
  EXPECT_EQ(s.phase, session::Phase::kDone);
  EXPECT_LT(s.candidates.size(), ideas.size()) << "the budget cut the search";
  EXPECT_EQ(s.stop_reason, "budget: the search's share of it ran out");
  const PhaseRecord* framework = nullptr;
  for (const PhaseRecord& ph : s.phases) {
    if (ph.phase == Phase::kFramework) framework = &ph;
  }
  ASSERT_NE(framework, nullptr);
  EXPECT_EQ(framework->note, kFrameworkBudgetNote);
}

// Issue 18: accuracy runs (the gate's probes and perplexity) count against the wall
// budget like trials. Here each takes 4.5 trials: the kept risky change is checked
// before its pairs and the close checks the best again after its re-validation: the
// session ends inside the budget and every check is counted.
TEST_F(CoordinatorTest, SlowAccuracyChecksStayInsideTheBudget) {
  exec_.accuracy_cost_s = 45;
  exec_.factors = {{"weights=q0", 1.3}};
  std::vector<std::string> ideas = {"weights=q0"};
  for (int i = 0; i < 40; ++i) ideas.push_back("k" + std::to_string(i) + "=v");
  ListProposer p(ideas);
  int64_t start = clock_.WallMicros();
  SessionState s = Run(Spec(300), &p);
  double used = static_cast<double>(clock_.WallMicros() - start) * 1e-6;
  EXPECT_LE(used, 300 * 1.02) << "used " << used << " s of a 300 s budget";
  EXPECT_EQ(s.best.ToString(), "weights=q0");
  EXPECT_GE(exec_.accuracy_checks, 1);
  EXPECT_EQ(s.accuracy_checks_run, exec_.accuracy_checks);
  EXPECT_EQ(s.stop_reason, "budget");
  EXPECT_EQ(s.phase, session::Phase::kDone);
  EXPECT_EQ(closer_.calls, 1);
}

// A close whose re-validation trials are three times slower than every trial before
// (a loaded machine at the end): priced at the longest trial, its pairs stop before
// the deadline; priced at the mean (the rule before issue 18), its second pair ran the
// session to 620 s of a 600 s budget.
TEST_F(CoordinatorTest, ACloseThatWouldOverrunIsCutAtTheBudget) {
  exec_.cost_s = [](const measure::TrialRequest& r) { return r.role == measure::TrialRole::kValidate ? 30.0 : 10.0; };
  exec_.factors = {{"speed=fast", 1.2}};
  std::vector<std::string> ideas = {"speed=fast"};
  for (int i = 0; i < 40; ++i) ideas.push_back("k" + std::to_string(i) + "=v");
  ListProposer p(ideas);
  int64_t start = clock_.WallMicros();
  SessionState s = Run(Spec(600), &p);
  double used = static_cast<double>(clock_.WallMicros() - start) * 1e-6;
  EXPECT_LE(used, 600 * 1.02) << "used " << used << " s of a 600 s budget";
  EXPECT_EQ(s.best.ToString(), "speed=fast");
  ASSERT_TRUE(s.validation_verdict.has_value());  // the close ran, cut by the budget
  EXPECT_EQ(s.phase, session::Phase::kDone);
  EXPECT_EQ(closer_.calls, 1);
}

TEST_F(CoordinatorTest, CycleCeilingStopsTheLoop) {
  exec_.factors = {{"a=1", 1.3}, {"b=1", 1.3}};
  ListProposer p({"a=1", "b=1"});
  spec::SessionSpec spec = Spec();
  spec.budget.max_cycles = 1;
  SessionState s = Run(spec, &p);
  EXPECT_EQ(s.cycle, 1);
  EXPECT_EQ(s.stop_reason, "cycle ceiling reached");
  EXPECT_EQ(s.best.ToString(), "a=1 b=1");
}

TEST_F(CoordinatorTest, RooflineSaturationEndsCycling) {
  exec_.factors = {{"a=1", 1.3}};
  ListProposer p({"a=1"});
  SessionServices svc;
  svc.executor = &exec_;
  svc.proposer = &p;
  svc.clock = &clock_;
  int calls = 0;
  svc.roofline = [&](const Config&, double total, double) -> Result<RooflineNote> {
    ++calls;
    return RooflineNote{"bound 100 tok/s, measured " + std::to_string(static_cast<int>(total)), 0.97, true};
  };
  spec::SessionSpec spec = Spec();
  Coordinator c(spec, svc, Coordinator::NewState(spec, dir_->path().string(), clock_));
  auto s = c.Run();
  ASSERT_OK(s);
  EXPECT_EQ(s->stop_reason, "at the roofline: no headroom left");
  EXPECT_EQ(s->cycle, 1);
  EXPECT_EQ(calls, 2);  // the stock baseline, and the validated best at close
  EXPECT_NE(s->roofline.find("stock: bound 100 tok/s"), std::string::npos) << s->roofline;
  EXPECT_NE(s->roofline.find("; best: "), std::string::npos) << s->roofline;
}

// Records the evidence the coordinator hands the search with each request.
class CapturingProposer final : public search::Proposer {
 public:
  std::optional<search::Candidate> Next(const search::ProposalContext& ctx) override {
    seen.push_back(ctx);
    if (seen.size() > 1) return std::nullopt;
    search::Candidate c;
    c.idea = "a=1";
    c.delta = Config{{"a", "1"}};
    return c;
  }
  void Observe(const search::Observation&) override {}
  std::string Save() const override { return ""; }
  Status Load(const std::string&) override { return Ok(); }
  std::string Describe() const override { return ""; }
  std::vector<search::ProposalContext> seen;
};

TEST_F(CoordinatorTest, TheSearchGetsTheRooflineNoiseFloorAndBaselineMetrics) {
  exec_.factors = {{"a=1", 1.3}};
  CapturingProposer p;
  auto s = RunWithRoofline(p, 4, 0.4, "memory_bandwidth");
  ASSERT_OK(s);
  const spec::SessionSpec spec = Spec();
  ASSERT_FALSE(p.seen.empty());
  const search::ProposalContext& ctx = p.seen.front();
  ASSERT_TRUE(ctx.headroom.has_value());
  EXPECT_DOUBLE_EQ(*ctx.headroom, 0.4);
  EXPECT_EQ(ctx.bottleneck, "memory_bandwidth");
  ASSERT_TRUE(ctx.noise_floor.has_value());
  EXPECT_DOUBLE_EQ(*ctx.noise_floor, s->noise_floor);
  EXPECT_EQ(ctx.baseline_metrics.at("concurrency"), 4);
  EXPECT_EQ(ctx.baseline_metrics.at("osl"), static_cast<double>(spec.workload.osl));
  // The evidence survives a save and load (a resumed session plans the same way).
  auto loaded = LoadState(dir_->path().string());
  ASSERT_OK(loaded);
  EXPECT_DOUBLE_EQ(loaded->roofline_ratio, 0.4);
  EXPECT_EQ(loaded->roofline_bound, "memory_bandwidth");
}

TEST_F(CoordinatorTest, TheDiagnosisSeesTheServersQueueFromTheStockTrials) {
  // 16 requests in flight on 4 slots: llama-server's /metrics shows ~10 waiting. The
  // stock trials' scrape reaches the search, which diagnoses queueing before the
  // roofline's class (a live H100 session saw only latencies and said "overhead").
  exec_.factors = {{"a=1", 1.3}};
  // The first stock trial's scrape is missing the queue (a scrape can fail): the mean is
  // over the trials that reported it, not diluted by the one that did not.
  int stock_trials = 0;
  bool searching = false;
  std::vector<double> reported;
  exec_.requests = [&](const measure::TrialRequest& req, bench::BenchResult& r) {
    r.running_mean = 3.6;
    searching = searching || !req.config.empty();
    if (searching || ++stock_trials <= 2) return;  // the warm-up and the first baseline trial: no queue
    r.queue_depth_mean = 9.0 + stock_trials;       // 12, 13, ...
    reported.push_back(*r.queue_depth_mean);
  };
  CapturingProposer p;
  auto s = RunWithRoofline(p, 16, 0.09, "overhead");
  ASSERT_GE(reported.size(), 2u);
  const double queue = Mean(reported);
  ASSERT_OK(s);
  ASSERT_FALSE(p.seen.empty());
  const search::ProposalContext& ctx = p.seen.front();
  ASSERT_TRUE(ctx.baseline_metrics.contains("queue_depth_mean"));
  EXPECT_NEAR(ctx.baseline_metrics.at("queue_depth_mean"), queue, 1e-9);
  EXPECT_NEAR(ctx.baseline_metrics.at("running_mean"), 3.6, 1e-9);
  EXPECT_FALSE(ctx.baseline_metrics.contains("kv_usage_max"));  // not scraped, not invented
  search::Diagnosis d = search::Diagnose(ctx.bottleneck, ctx.baseline_metrics, search::DiagnosisRules{});
  EXPECT_EQ(d.bottleneck, search::Bottleneck::kQueueing) << d.evidence;
  // Kept in the state: a resumed session diagnoses the same way.
  auto loaded = LoadState(dir_->path().string());
  ASSERT_OK(loaded);
  EXPECT_NEAR(loaded->baseline_metrics.at("queue_depth_mean"), queue, 1e-9);
  EXPECT_EQ(loaded->baseline_metric_trials.at("queue_depth_mean"), static_cast<int>(reported.size()));
}

class FakePatchLane final : public PatchLane {
 public:
  std::vector<PatchIdea> Pending(const SessionState& s) override {
    std::vector<PatchIdea> out;
    for (const auto& id : {"fast", "slow", "broken"}) {
      bool tried = false;
      for (const auto& c : s.candidates) tried = tried || c.patch == id;
      if (!tried) out.push_back({id, std::string("patch ") + id});
    }
    return out;
  }
  Result<PatchResult> Try(const PatchIdea& idea, const std::function<Result<bool>(const std::string&)>& measure) override {
    tried.push_back(idea.id);
    if (build_s > 0) {  // a build of build_s seconds, stopped at the limit it was given
      const double limit = limits.empty() ? build_s : std::min(build_s, static_cast<double>(limits.back().count()));
      clock->AdvanceSeconds(limit);
      if (limit < build_s) {
        return PatchResult{PatchStatus::kBuildFailed, "build timed out", "", "1 file", "build.timeout", limit};
      }
    }
    if (idea.id == "broken") {
      return PatchResult{PatchStatus::kBuildFailed, "compile error in server.cpp", "", "1 file", "build.failed", 3};
    }
    HONE_ASSIGN_OR_RETURN(bool keep, measure("/builds/" + idea.id + "/llama-server"));
    return PatchResult{keep ? PatchStatus::kKept : PatchStatus::kReverted, keep ? "committed" : "reset",
                       keep ? "/kept/" + idea.id : "", "1 file changed", "", 5};
  }
  void LimitBuild(std::chrono::seconds s) override { limits.push_back(s); }
  std::vector<std::string> tried;
  std::vector<std::chrono::seconds> limits;
  double build_s = 0;
  testing::FakeClock* clock = nullptr;
};

// A first build is priced at nothing, and a cold llama.cpp build takes minutes: the
// lane is told how long the build may run (what the budget leaves after the patch's
// trials and the close), and a build that would run past it is stopped and recorded,
// so the session still ends within its budget.
TEST_F(CoordinatorTest, APatchBuildIsBoundedByTheBudgetLeft) {
  exec_.binary_factors = {{"/builds/fast/llama-server", 1.25}, {"/kept/fast", 1.25}};
  ListProposer p({});
  FakePatchLane lane;
  lane.build_s = 900;  // a cold build, longer than the whole budget
  lane.clock = &clock_;
  SessionServices svc;
  svc.executor = &exec_;
  svc.proposer = &p;
  svc.clock = &clock_;
  svc.patches = &lane;
  spec::SessionSpec spec = Spec(600);
  const int64_t start = clock_.WallMicros();
  Coordinator c(spec, svc, Coordinator::NewState(spec, dir_->path().string(), clock_));
  auto s = c.Run();
  ASSERT_OK(s);
  ASSERT_FALSE(lane.limits.empty());
  EXPECT_LT(lane.limits.front().count(), 600);
  ASSERT_FALSE(s->candidates.empty());
  EXPECT_EQ(s->candidates[0].verdict, Verdict::kBuildFailed);
  EXPECT_NE(s->candidates[0].reason.find("build timed out"), std::string::npos) << s->candidates[0].reason;
  EXPECT_LE(static_cast<double>(clock_.WallMicros() - start) * 1e-6, 600 * 1.02) << "the build ran past the budget";
}

TEST_F(CoordinatorTest, PatchesAreMeasuredAndKeptOnlyWhenFaster) {
  exec_.binary_factors = {{"/builds/fast/llama-server", 1.25}, {"/kept/fast", 1.25}, {"/builds/slow/llama-server", 1.25 * 0.97}};
  ListProposer p({});
  FakePatchLane lane;
  SessionServices svc;
  svc.executor = &exec_;
  svc.proposer = &p;
  svc.clock = &clock_;
  svc.patches = &lane;
  spec::SessionSpec spec = Spec();
  Coordinator c(spec, svc, Coordinator::NewState(spec, dir_->path().string(), clock_));
  auto s = c.Run();
  ASSERT_OK(s);
  EXPECT_EQ(lane.tried, (std::vector<std::string>{"fast", "slow", "broken"}));
  ASSERT_EQ(s->candidates.size(), 3u);
  EXPECT_EQ(s->candidates[0].verdict, Verdict::kKeep);
  EXPECT_FALSE(s->candidates[0].accuracy.empty());  // new code is always accuracy-checked
  EXPECT_EQ(s->candidates[1].verdict, Verdict::kRevert);
  EXPECT_EQ(s->candidates[1].incumbent_binary, "/kept/fast");  // measured against the kept patch
  EXPECT_EQ(s->candidates[2].verdict, Verdict::kBuildFailed);
  EXPECT_EQ(s->server_binary, "/kept/fast");
  EXPECT_TRUE(s->validated);
  EXPECT_NEAR(s->validated_gain, 0.25, 0.03);  // stock on the provisioned build vs best on the patch
  // Validation ran the stock config on the provisioned binary and the best on the patch.
  bool stock_on_provisioned = false, best_on_patch = false;
  for (const auto& t : exec_.ran) {
    if (t.role == measure::TrialRole::kValidate && t.server_binary.empty()) stock_on_provisioned = true;
    if (t.role == measure::TrialRole::kValidate && t.server_binary == "/kept/fast") best_on_patch = true;
  }
  EXPECT_TRUE(stock_on_provisioned && best_on_patch);
}

TEST_F(CoordinatorTest, CriticCanOnlyMakeVerdictsMoreConservative) {
  exec_.factors = {{"a=1", 1.3}, {"b=1", 1.3}, {"c=1", 0.95}};
  ListProposer p({"a=1", "b=1", "c=1"});
  SessionServices svc;
  svc.executor = &exec_;
  svc.proposer = &p;
  svc.clock = &clock_;
  std::vector<std::string> reviewed;
  svc.critic = [&](const CandidateRecord& c, Verdict measured) -> Result<CriticNote> {
    reviewed.push_back(c.id + ":" + std::string(VerdictName(measured)));
    // Refuses b=1 (a measured KEEP) and approves everything else, even the loss.
    return CriticNote{c.delta.Has("b") ? false : true, c.delta.Has("b") ? "gain suspicious" : "fine", "", "sig"};
  };
  spec::SessionSpec spec = Spec();
  spec.budget.max_cycles = 1;
  Coordinator c(spec, svc, Coordinator::NewState(spec, dir_->path().string(), clock_));
  ASSERT_OK_AND_ASSIGN(SessionState s, c.Run());
  ASSERT_EQ(s.candidates.size(), 3u);
  EXPECT_EQ(s.candidates[0].verdict, Verdict::kKeep);
  EXPECT_EQ(s.candidates[1].verdict, Verdict::kRevert);  // refused by the critic
  EXPECT_NE(s.candidates[1].reason.find("critic refused: gain suspicious"), std::string::npos);
  EXPECT_EQ(s.candidates[2].verdict, Verdict::kRevert);  // an approval cannot keep a loss
  EXPECT_EQ(s.best.ToString(), "a=1");
  EXPECT_EQ(reviewed.size(), 3u);
  EXPECT_NE(s.candidates[0].critic.find("approved"), std::string::npos);
}

TEST_F(CoordinatorTest, TrialLimitStops) {
  ListProposer p({"a=1", "b=1", "c=1", "d=1"});
  spec::SessionSpec spec = Spec();
  spec.budget.max_trials = 12;
  SessionState s = Run(spec, &p);
  EXPECT_LE(s.trials_run, 12);
  EXPECT_EQ(s.phase, session::Phase::kDone);
}

TEST_F(CoordinatorTest, EnablementClimbsTheLadder) {
  exec_.crashes = {{"ctx=default", "out_of_memory"}, {"ctx=big", "out_of_memory"}};
  ListProposer p({});
  spec::SessionSpec spec = Spec();
  spec.target.base_config = Config{{"ctx", "default"}};
  SessionState s = Run(spec, &p);
  EXPECT_EQ(s.stock.ToString(), "ctx=small");
  EXPECT_EQ(s.stock_note, "enabled with ctx=small after out_of_memory");
  ASSERT_GE(s.candidates.size(), 2u);
  EXPECT_EQ(s.candidates[0].verdict, Verdict::kLaunchFailed);  // ctx=big
  EXPECT_EQ(s.candidates[1].verdict, Verdict::kKeep);           // ctx=small
  EXPECT_EQ(s.baseline_trials.size(), 2u);
}

TEST_F(CoordinatorTest, StockThatNeverLaunchesStillCloses) {
  exec_.crashes = {{"model=bad", "model_load"}};
  ListProposer p({"a=1"});
  spec::SessionSpec spec = Spec();
  spec.target.base_config = Config{{"model", "bad"}};
  SessionState s = Run(spec, &p);
  EXPECT_EQ(s.phase, session::Phase::kDone);
  EXPECT_NE(s.stop_reason.find("does not launch (model_load)"), std::string::npos) << s.stop_reason;
  EXPECT_EQ(closer_.calls, 1);
  EXPECT_TRUE(s.candidates.empty() || s.candidates[0].phase == CandidatePhase::kEnablement);
}

TEST_F(CoordinatorTest, FasterButInaccurateIsNotKept) {
  exec_.factors = {{"weights=q4_0", 2.0}, {"weights=q8_0", 1.5}};
  exec_.inaccurate = {"weights=q4_0"};
  ListProposer p({"weights=q4_0", "weights=q8_0"});
  SessionState s = Run(Spec(), &p);
  ASSERT_GE(s.candidates.size(), 2u);
  EXPECT_EQ(s.candidates[0].verdict, Verdict::kAccuracyFailed);
  EXPECT_TRUE(s.candidates[0].incumbent_trials.empty());  // rejected before any pair
  EXPECT_EQ(s.candidates[1].verdict, Verdict::kKeep);
  EXPECT_EQ(s.best.ToString(), "weights=q8_0");
}

class FakeWarmStart final : public WarmStart {
 public:
  std::optional<WarmCandidate> recipe;
  int matches = 0;
  std::vector<std::string> replays;  // "recipe:verdict:gain:trials"
  std::optional<WarmCandidate> Match(std::string* explanation) override {
    ++matches;
    *explanation = recipe ? "direct hit" : "no recipe for this model";
    return recipe;
  }
  std::string RecordReplay(const WarmCandidate& c, const ReplayResult& r) override {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%lld:%s:%.2f:%zu", static_cast<long long>(c.recipe_id), std::string(VerdictName(r.verdict)).c_str(), r.gain,
                  r.trial_ids.size());
    replays.push_back(buf);
    return "judged by the fake knowledge base";
  }
};

class WarmCoordinatorTest : public CoordinatorTest {
 protected:
  SessionState RunWarm(const spec::SessionSpec& spec, search::Proposer* proposer) {
    SessionServices svc;
    svc.executor = &exec_;
    svc.proposer = proposer;
    svc.clock = &clock_;
    svc.closer = &closer_;
    svc.warm_start = &warm_;
    svc.risky = [](const Config& d) { return d.Has("weights"); };
    SessionState s = Coordinator::NewState(spec, dir_->path().string(), clock_);
    Coordinator c(spec, svc, s);
    auto out = c.Run();
    EXPECT_TRUE(out) << out.error().ToString();
    return out ? *out : SessionState{};
  }
  std::vector<std::string> Roles(size_t n) {
    std::vector<std::string> out;
    for (size_t i = 0; i < std::min(n, exec_.ran.size()); ++i) out.push_back(std::string(measure::TrialRoleName(exec_.ran[i].role)));
    return out;
  }
  FakeWarmStart warm_;
};

TEST_F(WarmCoordinatorTest, TheReplayRidesAlongTheBaselineAndIsJudgedOnItsPairs) {
  exec_.factors = {{"weights=q8_0", 1.30}};
  warm_.recipe = WarmCandidate{Config{{"weights", "q8_0"}}, 0.30, "direct hit", 7};
  spec::SessionSpec spec = Spec();
  spec.measurement.aa_pairs = 3;  // = min_pairs: the shared pairs decide it
  ListProposer p({});
  SessionState s = RunWarm(spec, &p);
  // warmup, then A1 B A2 three times; no screen, no extra incumbent trials.
  EXPECT_EQ(Roles(10), (std::vector<std::string>{"warmup", "baseline", "replay", "aa", "baseline", "replay", "aa",
                                                 "baseline", "replay", "aa"}));
  ASSERT_FALSE(s.candidates.empty());
  const CandidateRecord& r = s.candidates[0];
  EXPECT_EQ(r.phase, CandidatePhase::kPrelude);
  EXPECT_EQ(r.verdict, Verdict::kKeep);
  EXPECT_NEAR(r.gain, 0.30, 0.03);
  EXPECT_EQ(r.incumbent_trials, s.baseline_trials);  // each B paired with its A1
  EXPECT_EQ(r.candidate_trials.size(), 3u);
  EXPECT_TRUE(r.screen_trial.empty());
  EXPECT_FALSE(r.accuracy.empty());  // weights are risky: checked before the KEEP stands
  EXPECT_TRUE(r.accuracy_passed);
  EXPECT_EQ(s.aa_trials.size(), 3u);
  EXPECT_EQ(s.best.ToString(), "weights=q8_0");
  EXPECT_EQ(warm_.matches, 1);
  ASSERT_EQ(warm_.replays.size(), 1u);
  EXPECT_EQ(warm_.replays[0].substr(0, 7), "7:KEEP:");
  EXPECT_EQ(warm_.replays[0].substr(warm_.replays[0].size() - 2), ":3");  // its three trials
  EXPECT_NE(s.warm_replay.find("recipe 7 replayed: KEEP"), std::string::npos) << s.warm_replay;
  // The knowledge base's judgment is what the session reports.
  EXPECT_NE(s.warm_replay.find("(judged by the fake knowledge base)"), std::string::npos) << s.warm_replay;
}

TEST_F(WarmCoordinatorTest, TooFewSharedPairsAreExtendedWithOrdinaryOnes) {
  exec_.factors = {{"weights=q8_0", 1.30}};
  warm_.recipe = WarmCandidate{Config{{"weights", "q8_0"}}, 0.30, "direct hit", 3};
  ListProposer p({});
  SessionState s = RunWarm(Spec(), &p);  // aa_pairs 2 < min_pairs 3
  const CandidateRecord& r = s.candidates[0];
  EXPECT_EQ(r.verdict, Verdict::kKeep);
  ASSERT_EQ(r.candidate_trials.size(), 3u);
  EXPECT_EQ(r.incumbent_trials[0], s.baseline_trials[0]);
  EXPECT_EQ(r.incumbent_trials[1], s.baseline_trials[1]);
  EXPECT_EQ(std::count(r.incumbent_trials.begin(), r.incumbent_trials.end(), r.incumbent_trials[2]), 1);
  for (const auto& t : exec_.ran) {
    if (t.id == r.incumbent_trials[2]) {
      EXPECT_EQ(t.role, measure::TrialRole::kIncumbent);
    }
  }
}

TEST_F(WarmCoordinatorTest, ARecipeThatDoesNotLaunchLeavesTheBaselineWhole) {
  exec_.crashes = {{"weights=bad", "bad_flag"}};
  warm_.recipe = WarmCandidate{Config{{"weights", "bad"}}, 0.20, "direct hit", 4};
  ListProposer p({});
  SessionState s = RunWarm(Spec(), &p);
  EXPECT_EQ(s.candidates[0].verdict, Verdict::kLaunchFailed);
  EXPECT_EQ(s.baseline_trials.size(), 2u);
  EXPECT_EQ(s.aa_trials.size(), 2u);
  int replays = 0;
  for (const auto& t : exec_.ran) replays += t.role == measure::TrialRole::kReplay;
  EXPECT_EQ(replays, 1);  // tried once, then the baseline went on alone
  EXPECT_EQ(s.best, s.stock);
  ASSERT_EQ(warm_.replays.size(), 1u);
  EXPECT_EQ(warm_.replays[0].substr(0, 16), "4:LAUNCH_FAILED:");
  EXPECT_NE(s.warm_replay.find("recipe 4 replayed: LAUNCH_FAILED"), std::string::npos) << s.warm_replay;
}

TEST_F(WarmCoordinatorTest, NoRecipeMeansAPlainBaseline) {
  ListProposer p({});
  SessionState s = RunWarm(Spec(), &p);
  EXPECT_EQ(Roles(5), (std::vector<std::string>{"warmup", "baseline", "aa", "baseline", "aa"}));
  EXPECT_EQ(warm_.matches, 1);
  EXPECT_TRUE(warm_.replays.empty());
  EXPECT_NE(s.warm_replay.find("no recipe to replay"), std::string::npos);
}

TEST_F(CoordinatorTest, LaunchFailuresAreOutcomes) {
  exec_.crashes = {{"bad=1", "bad_flag"}};
  exec_.factors = {{"good=1", 1.25}};
  ListProposer p({"bad=1", "good=1"});
  SessionState s = Run(Spec(), &p);
  EXPECT_EQ(s.candidates[0].verdict, Verdict::kLaunchFailed);
  EXPECT_EQ(s.candidates[0].failure_kind, "bad_flag");
  EXPECT_EQ(s.candidates[1].verdict, Verdict::kKeep);
  EXPECT_EQ(p.observed[0], "bad=1:LAUNCH_FAILED");
}

TEST_F(CoordinatorTest, SweepRunsOverTheGridAndSkipsWhenUnchanged) {
  exec_.factors = {{"a=1", 1.3}};
  ListProposer p({"a=1"});
  spec::SessionSpec spec = Spec();
  spec.workload.sweep_concurrency = {1, 4};
  spec.workload.sweep_isl_osl = {{64, 16}};
  SessionState s = Run(spec, &p);
  ASSERT_EQ(s.sweep.size(), 2u);
  EXPECT_EQ(s.sweep[0].concurrency, 1);
  EXPECT_EQ(s.sweep[1].concurrency, 4);
  EXPECT_EQ(s.sweep[0].verdict, Verdict::kKeep);
  EXPECT_EQ(s.sweep[0].best_config, "a=1");
  EXPECT_EQ(s.sweep[0].stock_trials.size(), 3u);
  int sweeps_done = 0;
  for (const auto& ph : s.phases) sweeps_done += ph.phase == Phase::kSweep && ph.status == PhaseStatus::kDone;
  EXPECT_EQ(sweeps_done, 1);  // the second cycle changed nothing: its sweep was skipped
}

// The close's reserve prices its trials as the close does (the longest valid trial):
// with a slow stock and fast candidates, a reserve priced at the mean trial let the
// search spend it, and the best was never re-validated (the command-template session
// under ctest -j2).
TEST_F(CoordinatorTest, TheCloseReserveHoldsWhenTheStocksTrialsAreTheSlowOnes) {
  exec_.factors = {{"a=1", 1.5}};
  exec_.cost_s = [](const measure::TrialRequest& r) { return r.config.Has("a") ? 2.0 : 60.0; };
  std::vector<std::string> ideas = {"a=1"};
  for (int i = 0; i < 60; ++i) {  // small real gains: every one measured and kept, no plateau
    ideas.push_back("n" + std::to_string(i) + "=1");
    exec_.factors["n" + std::to_string(i) + "=1"] = 1.04;
  }
  ListProposer p(ideas);
  spec::SessionSpec spec = Spec(1500);
  spec.budget.max_cycles = 1;
  SessionState s = Run(spec, &p);
  ASSERT_TRUE(s.best.Has("a"));
  ASSERT_GT(s.candidates.size(), 10u) << "the search ran until its budget";
  EXPECT_TRUE(s.validated) << "the close had its reserve";
  EXPECT_EQ(s.validation_verdict, Verdict::kKeep);
}

// A KEEP the close cannot re-validate is a gain hone cannot report: the close's pairs
// are held from the end of the prelude on, not only once something was kept. Neutral
// ideas run until the budget's end, the last one a real gain; whatever budget cuts the
// search, a kept candidate is re-validated at the close. With the reserve at zero while
// the stock led, a winner tried late used the close's time and went unvalidated.
TEST_F(CoordinatorTest, ALateKeepStillHasTheClosesPairs) {
  int kept = 0;
  for (double wall = 400; wall <= 640; wall += 10) {
    SCOPED_TRACE("budget " + std::to_string(wall) + " s");
    exec_.factors.clear();
    std::vector<std::string> ideas;
    for (int i = 0; i < 4; ++i) {
      ideas.push_back("n" + std::to_string(i) + "=1");
      exec_.factors["n" + std::to_string(i) + "=1"] = 1.0;
    }
    ideas.push_back("win=1");
    exec_.factors["win=1"] = 1.5;
    ListProposer p(ideas);
    spec::SessionSpec spec = Spec(wall);
    spec.budget.max_cycles = 1;
    spec.measurement.max_pairs = 3;
    auto d = sys::TempDir::Create("hone-coord-late");
    ASSERT_TRUE(d);
    exec_.run_dir = d->get()->path().string();
    SessionServices svc;
    svc.executor = &exec_;
    svc.proposer = &p;
    svc.clock = &clock_;
    svc.closer = &closer_;
    SessionState s = Coordinator::NewState(spec, d->get()->path().string(), clock_);
    Coordinator c(spec, svc, s);
    auto out = c.Run();
    ASSERT_TRUE(out) << out.error().ToString();
    if (out->BestIsStock()) continue;
    ++kept;
    EXPECT_TRUE(out->validated) << "kept " << out->best.ToString() << " and never re-validated it";
    EXPECT_EQ(out->validation_verdict, Verdict::kKeep);
  }
  EXPECT_GT(kept, 0) << "no budget reached the winner: the test checks nothing";
}

// Operating points the budget leaves out are named in the sweep phase's note (the
// report prints it under the table), not dropped in silence.
TEST_F(CoordinatorTest, TheSweepNamesThePointsTheBudgetLeftOut) {
  exec_.factors = {{"a=1", 1.3}};
  exec_.cost_s = [](const measure::TrialRequest& r) {
    return r.role == measure::TrialRole::kSweep ? 1200.0 : 10.0;  // the sweep's first point eats the budget
  };
  ListProposer p({"a=1"});
  spec::SessionSpec spec = Spec();
  spec.budget.max_cycles = 1;
  spec.workload.sweep_concurrency = {1, 4, 16};
  spec.workload.sweep_isl_osl = {{64, 16}};
  SessionState s = Run(spec, &p);
  ASSERT_EQ(s.sweep.size(), 1u);
  EXPECT_EQ(s.sweep[0].concurrency, 1);
  const PhaseRecord* sweep = nullptr;
  for (const auto& ph : s.phases) {
    if (ph.phase == Phase::kSweep) sweep = &ph;
  }
  ASSERT_NE(sweep, nullptr);
  EXPECT_EQ(sweep->note, "1 of 3 operating points; not measured: c4 isl64 osl16, c16 isl64 osl16 (budget)");
}

// Issue 18.3: the sweep re-tunes each point. The best (a=1) was tuned at the primary
// point; a slot count equal to the point's load (slots=N) is 25% faster at c4 and
// changes nothing at c1. At c4 the variant beats the best paired and becomes the
// point's best, with its own figures and trials; at c1 it is measured and not kept.
TEST_F(CoordinatorTest, SweepRetunesEachPointAndKeepsOnlyAVariantThatWins) {
  spec::SessionSpec spec = SweepSpec();
  SessionState s = RunSlotsSweep(spec, 1.3, 1.25);
  ASSERT_EQ(s.sweep.size(), 2u);
  const SweepPointRecord& c1 = s.sweep[0];
  const SweepPointRecord& c4 = s.sweep[1];
  EXPECT_EQ(c1.retune_config, "a=1 slots=1");
  EXPECT_EQ(c1.retune_against, "a=1") << "the best won at c1: the variant is measured against it";
  EXPECT_NE(c1.retune_verdict, Verdict::kKeep);
  EXPECT_EQ(c1.best_config, "a=1") << "a variant that does not win changes nothing";
  EXPECT_EQ(c1.retune_trials.size(), 3u);
  EXPECT_EQ(c4.retune_config, "a=1 slots=4");
  EXPECT_EQ(c4.retune_verdict, Verdict::kKeep);
  EXPECT_NEAR(c4.retune_gain, 0.25, 0.03);
  EXPECT_EQ(c4.best_config, "a=1 slots=4") << "the point's best is the re-tuned variant";
  EXPECT_EQ(c4.verdict, Verdict::kKeep);
  EXPECT_NEAR(c4.best_objective / c4.stock_objective, 1.3 * 1.25, 0.08) << "its figures are the variant's";
  for (const auto& id : c4.retune_trials) {
    auto o = measure::ReadTrialOutcome(dir_->path().string() + "/trials/" + id);
    ASSERT_TRUE(o) << id;
    EXPECT_EQ(o->config.ToString(), "a=1 slots=4");
    EXPECT_EQ(o->point.concurrency, 4);
  }
  EXPECT_EQ(s.best.ToString(), "a=1") << "the session's best is unchanged: the variant won at one point only";
  // Saved and read back; `sweep: {retune: 0}` turns it off.
  ASSERT_OK_AND_ASSIGN(SessionState loaded, LoadState(dir_->path().string()));
  EXPECT_EQ(loaded.sweep[1].retune_trials, c4.retune_trials);
  EXPECT_EQ(loaded.sweep[1].retune_verdict, Verdict::kKeep);
  ASSERT_OK_AND_ASSIGN(dir_, sys::TempDir::Create("hone-coord"));
  exec_.run_dir = dir_->path().string();
  spec.workload.sweep_retune = 0;
  ListProposer q({"a=1"});
  SessionState off = Run(spec, &q);
  ASSERT_EQ(off.sweep.size(), 2u);
  EXPECT_TRUE(off.sweep[1].retune_config.empty());
  EXPECT_EQ(off.sweep[1].best_config, "a=1");
}

// A session whose best stays the stock still sweeps when the engine has load-tracking
// knobs: each point re-tunes the stock (its figures from the base arm), so the report
// has a front for the stock and one for the best per point. Without variants it skips.
TEST_F(CoordinatorTest, AStockBestSweepsByRetuningTheStock) {
  spec::SessionSpec spec = SweepSpec();
  SessionState s = RunSlotsSweep(spec, 0.7, 1.3);
  ASSERT_TRUE(s.BestIsStock());
  ASSERT_EQ(s.sweep.size(), 2u);
  const SweepPointRecord& c1 = s.sweep[0];
  const SweepPointRecord& c4 = s.sweep[1];
  EXPECT_TRUE(c1.stock_trials.empty()) << "no stock-vs-best pair: the best is the stock";
  EXPECT_EQ(c1.retune_config, "slots=1");
  EXPECT_EQ(c1.retune_against, "");
  EXPECT_EQ(c1.retune_base_trials.size(), 3u);
  EXPECT_NEAR(c1.stock_objective, 100, 5) << "the stock's figures come from the base arm";
  EXPECT_GT(c1.stock_tps, 0);
  EXPECT_EQ(c1.best_config, "(stock)") << "slots=1 changes nothing at c1: the stock stays the point's best";
  EXPECT_EQ(c4.retune_verdict, Verdict::kKeep);
  EXPECT_EQ(c4.verdict, Verdict::kKeep);
  EXPECT_EQ(c4.best_config, "slots=4");
  EXPECT_NEAR(c4.best_objective / c4.stock_objective, 1.3, 0.06);
  // A point with no variant to try is dropped, and the note says why (not "budget").
  ASSERT_OK_AND_ASSIGN(dir_, sys::TempDir::Create("hone-coord"));
  exec_.run_dir = dir_->path().string();
  point_variants_ = [](const Config& c, const measure::OperatingPoint& p) {
    if (p.concurrency == 1) return std::vector<Config>{};
    Config v = c;
    v.Set("slots", std::to_string(p.concurrency));
    return std::vector<Config>{v};
  };
  ListProposer r({"a=1"});
  SessionState some = Run(spec, &r);
  ASSERT_EQ(some.sweep.size(), 1u);
  EXPECT_EQ(some.sweep[0].concurrency, 4);
  std::string note;
  for (const auto& ph : some.phases) {
    if (ph.phase == Phase::kSweep) note = ph.note;
  }
  EXPECT_EQ(note, "1 of 2 operating points; not measured: c1 isl64 osl16 (nothing to re-tune: the stock is already "
                  "set for the load)");
  // No load-tracking knob: nothing to sweep.
  ASSERT_OK_AND_ASSIGN(dir_, sys::TempDir::Create("hone-coord"));
  exec_.run_dir = dir_->path().string();
  point_variants_ = nullptr;
  ListProposer q({"a=1"});
  SessionState none = Run(spec, &q);
  EXPECT_TRUE(none.sweep.empty());
  bool skipped = false;
  for (const auto& ph : none.phases) skipped |= ph.phase == Phase::kSweep && ph.status == PhaseStatus::kSkipped;
  EXPECT_TRUE(skipped);
}

// A kernel lane that dies as the kernel phase starts: the session is killed right
// after its framework phase, with the state saved in phase "kernel".
class DyingKernelLane final : public KernelLane {
 public:
  Result<std::vector<search::Candidate>> Propose(const SessionState&, std::string*) override { _exit(0); }
};

// The KEEPs that earn another cycle are counted from the saved candidates: a session
// resumed after its framework phase still cycles (it used to close as "converged").
TEST_F(CoordinatorTest, ASessionResumedAfterTheFrameworkPhaseStillCycles) {
  exec_.factors = {{"a=1", 1.3}};
  spec::SessionSpec spec = Spec();
  DyingKernelLane lane;
  SessionState killed = RunDyingChild(spec, {"a=1"}, &lane);
  ASSERT_EQ(killed.phase, Phase::kKernel);
  ASSERT_EQ(killed.candidates.size(), 1u);
  ASSERT_EQ(killed.candidates[0].verdict, Verdict::kKeep);
  ListProposer p({"a=1"});
  SessionState s = Run(spec, &p, &killed);
  EXPECT_EQ(s.cycle, 2);  // cycle 1 gained: cycle 2 ran (and found nothing more)
  EXPECT_EQ(s.stop_reason, "converged: the last cycle found no gain");
  EXPECT_EQ(s.best.ToString(), "a=1");
}

// A session killed during its close validation (the GPU session of 2026-12-04 was, at
// the end of a device call) resumes the validation from the pairs it had measured: the
// whole pair and the half pair before the kill are judged with the rest, not measured
// again (the close used to start over and, out of budget, end NOT_VALIDATED).
TEST_F(CoordinatorTest, ACloseKilledMidPairResumesItsPairs) {
  exec_.factors = {{"speed=fast", 1.25}};
  spec::SessionSpec spec = Spec();
  spec.budget.max_cycles = 1;
  int validate = 0;  // counted in the child
  exec_.error_if = [&](const measure::TrialRequest& r) -> std::optional<Error> {
    if (r.role == measure::TrialRole::kValidate && ++validate == 4) _exit(0);  // kill -9 in pair 2's B
    return std::nullopt;
  };
  SessionState killed = RunDyingChild(spec, {"speed=fast"});
  exec_.error_if = nullptr;
  ASSERT_EQ(killed.phase, Phase::kClose);
  ASSERT_EQ(killed.close_pairs.a_trials.size(), 2u) << "pair 1 and pair 2's A were saved";
  ASSERT_EQ(killed.close_pairs.b_trials.size(), 1u);
  const std::vector<std::string> before = {killed.close_pairs.a_trials[0], killed.close_pairs.b_trials[0],
                                           killed.close_pairs.a_trials[1]};
  ListProposer p({});
  SessionState s = Run(spec, &p, &killed);
  EXPECT_EQ(s.phase, Phase::kDone);
  EXPECT_TRUE(s.validated);
  EXPECT_EQ(s.validation_verdict, Verdict::kKeep);
  ASSERT_EQ(s.validation_trials.size(), 6u) << "min_pairs pairs in all";
  EXPECT_EQ(std::vector<std::string>(s.validation_trials.begin(), s.validation_trials.begin() + 3), before)
      << "the pairs measured before the kill are part of the verdict";
  int validations_after = 0;
  for (const auto& r : exec_.ran) validations_after += r.role == measure::TrialRole::kValidate;
  EXPECT_EQ(validations_after, 3) << "pair 2's B and pair 3: nothing measured twice";
  EXPECT_NEAR(s.validated_gain, 0.25, 0.03);
}

// A session resumed after its prelude loads the accuracy reference again: the
// candidates and the close it goes on to are checked against it. (The GPU session of
// 2026-12-04 resumed into its close and passed the best's accuracy unchecked: the
// executor had no reference.)
TEST_F(CoordinatorTest, AResumedSessionChecksAccuracyAgainstItsReference) {
  exec_.factors = {{"weights=q8", 1.25}, {"weights=q4", 1.5}};  // q4 faster still, but inaccurate
  exec_.inaccurate = {"weights=q4"};
  spec::SessionSpec spec = Spec();
  spec.budget.max_cycles = 1;
  int candidates = 0;  // counted in the child
  exec_.error_if = [&](const measure::TrialRequest& r) -> std::optional<Error> {
    if (r.role == measure::TrialRole::kCandidate && ++candidates == 1) _exit(0);  // kill -9 in c001's pairs
    return std::nullopt;
  };
  SessionState killed = RunDyingChild(spec, {"weights=q8", "weights=q4"});
  exec_.error_if = nullptr;
  ASSERT_EQ(killed.phase, Phase::kFramework);
  ASSERT_TRUE(killed.accuracy_gate.prepared);
  exec_.references.clear();
  exec_.gate.prepared = false;  // a fresh process: nothing prepared
  ListProposer p({"weights=q8", "weights=q4"});
  SessionState s = Run(spec, &p, &killed);
  ASSERT_EQ(exec_.references.size(), 1u) << "the resume loads the reference again";
  ASSERT_EQ(s.candidates.size(), 2u);
  EXPECT_EQ(s.candidates[0].verdict, Verdict::kKeep);
  EXPECT_EQ(s.candidates[0].accuracy, "token agreement 100%");
  EXPECT_EQ(s.candidates[1].verdict, Verdict::kAccuracyFailed);
  EXPECT_EQ(s.candidates[1].accuracy, "token agreement 50%");
  EXPECT_TRUE(s.validated);
  EXPECT_EQ(s.close_accuracy, "pass: token agreement 100%");
}

// The hard deadline (sys::SetStopDeadline, armed by `hone run`) passing in the middle
// of a candidate's trial: the executor is cut as by an interrupt, but the session is
// over, not interrupted: the candidate is not judged (INCONCLUSIVE, its reason says
// why), the stop reason is the budget, the close writes the report without trials, and
// nothing is left to resume.
TEST_F(CoordinatorTest, TheHardDeadlineCutsTheTrialInFlightAndClosesWithTheReport) {
  exec_.factors = {{"a=1", 1.3}, {"b=1", 1.3}};
  int candidate_trials = 0;
  exec_.error_if = [&](const measure::TrialRequest& req) -> std::optional<Error> {
    if (req.role != measure::TrialRole::kCandidate || ++candidate_trials < 2) return std::nullopt;
    sys::SetStopDeadline(1.0);  // long past: the wall clock is beyond it
    return Cancelled("interrupted during a trial").error();
  };
  ListProposer p({"a=1", "b=1"});
  SessionState s = Run(Spec(), &p);
  const bool passed = sys::DeadlinePassed();
  sys::SetStopDeadline(0);
  EXPECT_TRUE(passed);
  EXPECT_FALSE(sys::InterruptRequested()) << "disarmed";
  EXPECT_EQ(s.phase, Phase::kDone);
  EXPECT_FALSE(s.interrupted) << "a spent budget is not an interrupt";
  EXPECT_FALSE(s.interrupted_in.has_value());
  EXPECT_EQ(s.stop_reason, "budget: the deadline came during the framework phase");
  ASSERT_EQ(s.candidates.size(), 1u) << "b=1 never started";
  EXPECT_EQ(s.candidates[0].verdict, Verdict::kInconclusive);
  EXPECT_NE(s.candidates[0].reason.find("deadline came while it was measured"), std::string::npos)
      << s.candidates[0].reason;
  EXPECT_TRUE(s.BestIsStock());
  EXPECT_EQ(closer_.calls, 1) << "the report is written";
  ASSERT_OK_AND_ASSIGN(SessionState saved, LoadState(dir_->path().string()));
  EXPECT_FALSE(Coordinator::Reopen(saved)) << "nothing to resume";
}

// A kernel lane that is interrupted (SIGTERM: Ctrl-C, a Slurm requeue) as the kernel
// phase starts.
class InterruptedKernelLane final : public KernelLane {
 public:
  Result<std::vector<search::Candidate>> Propose(const SessionState&, std::string*) override {
    raise(SIGTERM);
    return Cancelled("interrupted");
  }
};

// An interrupt closes the session with a report; `hone resume` reopens it in the
// phase the interrupt stopped and it goes on to its real close (it used to stay
// closed: a requeued Slurm job's resume did nothing).
TEST_F(CoordinatorTest, AnInterruptedSessionReopensWhereItStopped) {
  exec_.factors = {{"a=1", 1.3}};
  spec::SessionSpec spec = Spec();
  sys::InstallInterruptHandlers();
  SessionState interrupted;
  {
    ListProposer p({"a=1"});
    InterruptedKernelLane lane;
    SessionServices svc;
    svc.executor = &exec_;
    svc.proposer = &p;
    svc.clock = &clock_;
    svc.kernel = &lane;
    svc.closer = &closer_;
    Coordinator c(spec, svc, Coordinator::NewState(spec, dir_->path().string(), clock_));
    ASSERT_OK_AND_ASSIGN(interrupted, c.Run());
  }
  sys::ResetInterruptForTesting();
  EXPECT_EQ(interrupted.phase, Phase::kDone);
  EXPECT_TRUE(interrupted.interrupted);
  EXPECT_EQ(interrupted.stop_reason, "interrupted");
  EXPECT_FALSE(interrupted.validated) << "an interrupted close does not re-validate";
  EXPECT_EQ(closer_.calls, 1) << "the interrupted session has its report";
  ASSERT_OK_AND_ASSIGN(SessionState saved, LoadState(dir_->path().string()));
  ASSERT_TRUE(saved.interrupted_in.has_value()) << "the interrupted phase is in state.json";
  // The kernel phase records its lane's error and ends; the interrupt stops the
  // session before the sweep.
  EXPECT_EQ(*saved.interrupted_in, Phase::kSweep);

  ASSERT_TRUE(Coordinator::Reopen(saved));
  EXPECT_EQ(saved.phase, Phase::kSweep);
  EXPECT_FALSE(saved.interrupted);
  EXPECT_TRUE(saved.stop_reason.empty());
  ListProposer p({"a=1"});
  SessionState s = Run(spec, &p, &saved);
  EXPECT_EQ(s.phase, Phase::kDone);
  EXPECT_FALSE(s.interrupted);
  EXPECT_EQ(s.cycle, 2);  // cycle 1 gained: the reopened session cycles
  EXPECT_EQ(s.stop_reason, "converged: the last cycle found no gain");
  EXPECT_EQ(s.best.ToString(), "a=1");
  EXPECT_TRUE(s.validated) << "the real close re-validates the best";
  EXPECT_EQ(closer_.calls, 2);
  // A session that ran to its end is not reopened.
  EXPECT_FALSE(Coordinator::Reopen(s));
  EXPECT_EQ(s.phase, Phase::kDone);
}

// The enablement ladder's rungs that change numerics (a KV cache type) are
// accuracy-checked before one becomes the stock; they used to become it unchecked.
TEST_F(CoordinatorTest, AnEnablementRungThatChangesNumericsIsAccuracyChecked) {
  exec_.crashes = {{"kv=f16", "out_of_memory"}};
  exec_.inaccurate = {"kv=q4"};
  ListProposer p({});
  SessionServices svc;
  svc.executor = &exec_;
  svc.proposer = &p;
  svc.clock = &clock_;
  svc.risky = [](const Config& d) { return d.Has("kv"); };
  svc.enablement = [](const std::string&) {
    return std::vector<Config>{Config{{"kv", "q4"}}, Config{{"kv", "q8"}, {"ctx", "small"}}};
  };
  spec::SessionSpec spec = Spec();
  spec.target.base_config = Config{{"kv", "f16"}, {"ctx", "big"}};
  Coordinator c(spec, svc, Coordinator::NewState(spec, dir_->path().string(), clock_));
  ASSERT_OK_AND_ASSIGN(SessionState s, c.Run());
  ASSERT_GE(s.candidates.size(), 2u);
  EXPECT_EQ(s.candidates[0].delta.ToString(), "kv=q4");
  EXPECT_EQ(s.candidates[0].verdict, Verdict::kAccuracyFailed);  // launches, but changes the outputs
  EXPECT_EQ(s.candidates[1].verdict, Verdict::kKeep);
  EXPECT_TRUE(s.candidates[1].accuracy_passed);
  EXPECT_FALSE(s.candidates[1].accuracy.empty());
  EXPECT_EQ(s.stock.ToString(), "ctx=small kv=q8");
  // The reference it was checked against: the stock with the rung's knobs that keep
  // the numerics (the closest configuration that does not change them).
  ASSERT_FALSE(exec_.references.empty());
  EXPECT_EQ(exec_.references.front().ToString(), "ctx=big kv=f16");

  // When that reference cannot start either, the rung is taken unchecked and says so
  // (the report lists it as kept without an accuracy check).
  auto d = sys::TempDir::Create("hone-coord");
  ASSERT_TRUE(d);
  dir_ = std::move(*d);
  exec_.run_dir = dir_->path().string();
  exec_.reference_launches = false;
  ListProposer q({});
  svc.proposer = &q;
  Coordinator again(spec, svc, Coordinator::NewState(spec, dir_->path().string(), clock_));
  ASSERT_OK_AND_ASSIGN(SessionState t, again.Run());
  ASSERT_GE(t.candidates.size(), 1u);
  EXPECT_EQ(t.candidates[0].verdict, Verdict::kKeep);
  EXPECT_FALSE(t.candidates[0].accuracy_passed);
  EXPECT_EQ(t.candidates[0].accuracy.rfind("not checked: the reference ctx=big kv=f16 did not start", 0), 0u)
      << t.candidates[0].accuracy;
  EXPECT_EQ(t.stock.ToString(), "ctx=big kv=q4");
}

// A comparison cut short by the budget after min_pairs is judged on what it measured;
// a KEEP reached that way still faces the critic and the accuracy gate (it used to be
// kept without either).
TEST_F(CoordinatorTest, AKeepCutShortByTheBudgetStillFacesTheCriticAndTheAccuracyGate) {
  exec_.noise = 0;
  exec_.factors = {{"a=1", 1.0}};
  exec_.inaccurate = {"a=1"};
  int k = 0;
  const double gains[] = {1.246, 1.1275, 1.185, 1.185, 1.185};  // undecided at 3 pairs, a KEEP at 4
  exec_.adjust = [&](const measure::TrialRequest& req, double v) {
    return req.role == measure::TrialRole::kCandidate ? v * gains[std::min(k++, 4)] : v;
  };
  ListProposer p({"a=1"});
  int reviews = 0;
  SessionServices svc;
  svc.executor = &exec_;
  svc.proposer = &p;
  svc.clock = &clock_;
  svc.critic = [&](const CandidateRecord&, Verdict) -> Result<CriticNote> {
    ++reviews;
    return CriticNote{true, "fine", "", "sig"};
  };
  spec::SessionSpec spec = Spec();
  spec.budget.max_trials = 14;  // warm-up, 2 A/A pairs, a screen, then room for 4 pairs
  Coordinator c(spec, svc, Coordinator::NewState(spec, dir_->path().string(), clock_));
  ASSERT_OK_AND_ASSIGN(SessionState s, c.Run());
  ASSERT_EQ(s.candidates.size(), 1u);
  const CandidateRecord& a = s.candidates[0];
  EXPECT_EQ(a.pairs, 4);
  EXPECT_EQ(reviews, 1);
  EXPECT_EQ(a.verdict, Verdict::kAccuracyFailed) << a.reason;
  EXPECT_NE(a.reason.find("faster but the accuracy gate failed"), std::string::npos) << a.reason;
  EXPECT_EQ(s.best, s.stock);
}

// Resume after kill -9 at random points: the coordinator runs in a child process
// that is SIGKILLed repeatedly; each time the session is resumed from its state.
// Nothing validated is lost, no trial id is reused, and no stand-in server survives.
TEST(CoordinatorKillTest, ResumesAfterKill9WithNothingLost) {
  auto dir = sys::TempDir::Create("hone-kill");
  ASSERT_TRUE(dir);
  std::string run = (*dir)->path().string();
  std::string pid_log = run + "/pids.txt";
  spec::SessionSpec spec = Spec(3600);
  spec.budget.max_trials = 70;
  spec.budget.max_cycles = 2;
  const std::vector<std::string> ideas = {"a=1", "b=1", "c=1", "d=1", "e=1", "f=1"};
  auto configure = [&](FakeExecutor& e) {
    e.factors = {{"a=1", 1.3}, {"c=1", 0.95}, {"e=1", 1.25}};
    e.noise = 0.002;
    e.run_dir = run;
    e.pid_log = pid_log;
    e.real_sleep = std::chrono::milliseconds(15);
    e.trial_cost_s = 0.015;
  };
  auto run_session = [&]() -> SessionState {
    FakeExecutor exec;
    configure(exec);
    ListProposer proposer(ideas);
    SessionServices svc;
    svc.executor = &exec;
    svc.proposer = &proposer;
    svc.clock = &sys::DefaultClock();
    auto loaded = LoadState(run);
    SessionState s = loaded ? *loaded : Coordinator::NewState(spec, run, sys::DefaultClock());
    Coordinator c(spec, svc, s);
    auto out = c.Run();
    return out ? *out : SessionState{};
  };
  Rng rng(2026);
  int kills = 0;
  std::set<std::string> keeps_seen;
  for (int attempt = 0; attempt < 40; ++attempt) {
    auto before = LoadState(run);
    if (before && before->phase == Phase::kDone) break;
    if (before) {
      for (const auto& c : before->candidates) {
        if (c.verdict == Verdict::kKeep) keeps_seen.insert(c.id + ":" + c.config.ToString());
      }
    }
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      run_session();
      _exit(0);
    }
    usleep(static_cast<useconds_t>(rng.Uniform(40'000, 250'000)));
    if (kill(child, SIGKILL) == 0) ++kills;
    int status;
    waitpid(child, &status, 0);
  }
  SessionState final = run_session();
  EXPECT_EQ(final.phase, session::Phase::kDone);
  EXPECT_GE(kills, 3);
  EXPECT_GE(final.trials_run, 20);
  // Every KEEP seen between kills is still a KEEP.
  for (const std::string& k : keeps_seen) {
    bool found = false;
    for (const auto& c : final.candidates) found = found || ((c.id + ":" + c.config.ToString()) == k && c.verdict == Verdict::kKeep);
    EXPECT_TRUE(found) << "lost validated result " << k;
  }
  EXPECT_EQ(final.best.ToString(), "a=1 e=1");
  // Trial ids are unique and every recorded trial exists on disk.
  std::set<std::string> ids;
  for (const auto& c : final.candidates) {
    for (const auto* list : {&c.incumbent_trials, &c.candidate_trials}) {
      for (const auto& t : *list) {
        EXPECT_TRUE(ids.insert(c.id + "/" + t).second);
        EXPECT_TRUE(sys::FileExists((*dir)->path() / "trials" / t / "outcome.json")) << t;
      }
    }
  }
  // No stand-in server outlived its killed supervisor.
  auto pids = sys::ReadFile(pid_log);
  ASSERT_OK(pids);
  usleep(500'000);
  int alive = 0;
  for (const auto& line : Split(*pids, '\n')) {
    auto pid = ParseInt(line);
    if (!pid) continue;
    auto stat = sys::ReadFile("/proc/" + line + "/stat");
    if (kill(static_cast<pid_t>(*pid), 0) == 0 && stat && !Contains(*stat, ") Z ")) ++alive;
  }
  EXPECT_EQ(alive, 0);
}

// SLOs (issue 18): every configuration is held to them on the requests pooled over
// all its trials in a comparison; each fake trial has 16 requests whose inter-token
// gaps are `itl_ms` of its configuration.
class SloTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    CoordinatorTest::SetUp();
    exec_.requests = [this](const measure::TrialRequest& req, bench::BenchResult& r) {
      double itl_s = itl_ms.at(req.config.GetOr("speed", "stock")) / 1e3;
      if (itl_per_concurrency > 0) itl_s *= req.point.concurrency * itl_per_concurrency;
      r.successful = r.total = 16;
      r.duration_s = 10;
      r.samples = {};
      for (int i = 0; i < 16; ++i) {
        r.samples.ttft.push_back(0.1);
        r.samples.e2el.push_back(0.1 + 4 * itl_s);
        r.samples.tpot.push_back(itl_s);
        for (int g = 0; g < 4; ++g) r.samples.itl.push_back(itl_s);
      }
    };
  }
  spec::SessionSpec SloSpec() {
    spec::SessionSpec s = Spec();
    s.budget.max_cycles = 1;
    s.objective.slos = {{"p90_itl_ms", false, 50}};
    return s;
  }
  // The load bisection's setting: ITL per unit of load 10 ms for the stock, 3 ms for
  // speed=fast (20% faster), against p90_itl_ms <= 55 over a c1/c4/c16 sweep.
  spec::SessionSpec LoadSpec() {
    exec_.factors = {{"speed=fast", 1.20}};
    itl_ms = {{"stock", 10}, {"fast", 3}};
    itl_per_concurrency = 1;
    spec::SessionSpec spec = SloSpec();
    spec.objective.slos = {{"p90_itl_ms", false, 55}};
    spec.workload.concurrency = 1;
    spec.workload.sweep_concurrency = {1, 4, 16};
    return spec;
  }
  std::map<std::string, double> itl_ms;  // "stock" or the speed knob's value -> ms
  double itl_per_concurrency = 0;        // when set: itl_ms x concurrency x this
};

TEST_F(SloTest, PooledP90ItlVetoesAMeasuredKeep) {
  exec_.factors = {{"speed=fast", 1.20}};
  itl_ms = {{"stock", 40}, {"fast", 60}};
  ListProposer p({"speed=fast"});
  SessionState s = Run(SloSpec(), &p);
  ASSERT_EQ(s.candidates.size(), 1u);
  const CandidateRecord& c = s.candidates[0];
  EXPECT_NEAR(c.gain, 0.20, 0.02);  // faster: a KEEP on throughput alone
  EXPECT_EQ(c.verdict, Verdict::kRevert);
  EXPECT_NE(c.reason.find("SLO violated: p90_itl_ms = 60 violates p90_itl_ms <= 50"), std::string::npos) << c.reason;
  // The screening trial and the three B trials: 4 x 16 requests.
  EXPECT_NE(c.slo.find("pooled over 64 requests of 4 trials"), std::string::npos) << c.slo;
  EXPECT_TRUE(s.BestIsStock());
  EXPECT_NE(s.stock_slo.find("meets the SLO"), std::string::npos) << s.stock_slo;
  EXPECT_EQ(s.slo_infeasible, "");
}

TEST_F(SloTest, ViolatingStockWithNothingFeasibleIsReportedInfeasible) {
  exec_.factors = {{"speed=fast", 1.20}, {"speed=faster", 1.30}};
  itl_ms = {{"stock", 60}, {"fast", 70}, {"faster", 90}};
  ListProposer p({"speed=fast", "speed=faster"});
  SessionState s = Run(SloSpec(), &p);
  // The stock's violation does not make the candidates look fine: neither is kept.
  for (const CandidateRecord& c : s.candidates) EXPECT_EQ(c.verdict, Verdict::kRevert) << c.id << " " << c.reason;
  EXPECT_TRUE(s.BestIsStock());
  EXPECT_NE(s.stock_slo.find("p90_itl_ms = 60 violates"), std::string::npos) << s.stock_slo;
  EXPECT_NE(s.slo_infeasible.find("infeasible"), std::string::npos);
  EXPECT_NE(s.slo_infeasible.find("closest: stock"), std::string::npos) << s.slo_infeasible;  // 60 ms: the least miss
}

// The sweep judges each arm against the SLO at every operating point, so the report
// can name the highest load each configuration sustains within it.
TEST_F(SloTest, TheSweepJudgesEachArmAtEveryLoad) {
  exec_.factors = {{"speed=fast", 1.20}};
  itl_ms = {{"stock", 10}, {"fast", 3}};  // ms per unit of concurrency
  itl_per_concurrency = 1;
  spec::SessionSpec spec = SloSpec();
  spec.workload.concurrency = 1;
  spec.workload.sweep_concurrency = {1, 4, 16};
  ListProposer p({"speed=fast"});
  SessionState s = Run(spec, &p);
  ASSERT_FALSE(s.BestIsStock());
  ASSERT_EQ(s.sweep.size(), 3u);
  // stock: 10, 40, 160 ms; fast: 3, 12, 48 ms against p90_itl_ms <= 50.
  EXPECT_EQ(s.sweep[0].stock_slo_excess, 0);
  EXPECT_EQ(s.sweep[1].stock_slo_excess, 0);
  EXPECT_GT(s.sweep[2].stock_slo_excess, 0) << s.sweep[2].stock_slo;
  for (const SweepPointRecord& pt : s.sweep) EXPECT_EQ(pt.best_slo_excess, 0) << pt.concurrency << " " << pt.best_slo;
  // Kept in state.json.
  auto back = StateFromJson(StateToJson(s));
  ASSERT_OK(back);
  EXPECT_GT(back->sweep[2].stock_slo_excess, 0);
}

// Max concurrency at SLO, bisected (issue 18.2): the grid says the stock meets the SLO at
// c4 and misses it at c16; the sweep probes the loads in between until the two ends are
// adjacent. ITL is 10 ms per unit of load for the stock, so it meets p90_itl_ms <= 55 up
// to c5: probes c10 (miss), c7 (miss), c5 (met), c6 (miss). The best (3 ms per unit)
// meets it at every grid load: nothing to bisect.
TEST_F(SloTest, TheSweepBisectsTheHighestLoadWithinTheSloBetweenGridPoints) {
  spec::SessionSpec spec = LoadSpec();
  ListProposer p({"speed=fast"});
  SessionState s = Run(spec, &p);
  ASSERT_FALSE(s.BestIsStock());
  ASSERT_EQ(s.slo_loads.size(), 1u);
  const SloLoadSearch& l = s.slo_loads[0];
  EXPECT_EQ(l.arm, "stock");
  EXPECT_EQ(l.grid_lo, 4);
  EXPECT_EQ(l.grid_hi, 16);
  EXPECT_EQ(l.lo, 5);
  EXPECT_EQ(l.hi, 6);
  EXPECT_EQ(l.note, "");
  std::vector<int> probed;
  for (const SloLoadProbe& pr : l.probes) {
    probed.push_back(pr.concurrency);
    EXPECT_EQ(pr.trials.size(), static_cast<size_t>(spec.measurement.min_pairs));
    EXPECT_EQ(pr.met, pr.concurrency <= 5) << pr.concurrency << " " << pr.slo;
    EXPECT_GT(pr.tps, 0);
    // The probe's trials ran the stock at the probe's load.
    for (const std::string& id : pr.trials) {
      auto it = std::ranges::find_if(exec_.ran, [&](const measure::TrialRequest& r) { return r.id == id; });
      ASSERT_NE(it, exec_.ran.end()) << id;
      EXPECT_EQ(it->point.concurrency, pr.concurrency);
      EXPECT_TRUE(it->config.empty()) << it->config.ToString();
    }
  }
  EXPECT_EQ(probed, (std::vector<int>{10, 7, 5, 6}));
  // Kept in state.json.
  auto back = StateFromJson(StateToJson(s));
  ASSERT_OK(back);
  ASSERT_EQ(back->slo_loads.size(), 1u);
  EXPECT_EQ(back->slo_loads[0].lo, 5);
  EXPECT_EQ(back->slo_loads[0].probes.size(), 4u);
  EXPECT_EQ(back->slo_loads[0].probes[2].trials, l.probes[2].trials);
}

// A session that keeps the stock, with nothing to re-tune per point, still answers the
// highest load within the SLO: the stock alone at each grid load, then the bisection.
TEST_F(SloTest, AStockOnlySweepMeasuresTheStockAloneAndBisectsItsLoad) {
  spec::SessionSpec spec = LoadSpec();
  spec.workload.sweep_retune = 0;
  ListProposer p({});
  SessionState s = Run(spec, &p);
  ASSERT_TRUE(s.BestIsStock());
  ASSERT_EQ(s.sweep.size(), 3u);
  for (const SweepPointRecord& pt : s.sweep) {
    EXPECT_EQ(pt.stock_trials.size(), static_cast<size_t>(spec.measurement.min_pairs)) << pt.concurrency;
    EXPECT_FALSE(pt.verdict.has_value()) << "nothing was compared";
    EXPECT_EQ(pt.stock_slo_excess == 0, pt.concurrency <= 4) << pt.concurrency << " " << pt.stock_slo;
  }
  ASSERT_EQ(s.slo_loads.size(), 1u);
  EXPECT_EQ(s.slo_loads[0].arm, "stock");
  EXPECT_EQ(s.slo_loads[0].lo, 5);
  EXPECT_EQ(s.slo_loads[0].hi, 6);
  // Without SLOs such a sweep has nothing to do.
  spec.objective.slos.clear();
  spec.name = "no-slo";
  ListProposer q({});
  EXPECT_TRUE(Run(spec, &q).sweep.empty());
}

// The probes are bounded: `sweep.slo_search: 2` stops at c4..c7 and says why; 0 probes
// nothing.
TEST_F(SloTest, TheSloLoadBisectionStopsAtItsProbeLimit) {
  spec::SessionSpec spec = LoadSpec();
  spec.workload.sweep_slo_search = 2;
  {
    ListProposer p({"speed=fast"});
    SessionState s = Run(spec, &p);
    ASSERT_EQ(s.slo_loads.size(), 1u);
    EXPECT_EQ(s.slo_loads[0].lo, 4);
    EXPECT_EQ(s.slo_loads[0].hi, 7);
    EXPECT_EQ(s.slo_loads[0].probes.size(), 2u);
    EXPECT_NE(s.slo_loads[0].note.find("2 probes"), std::string::npos) << s.slo_loads[0].note;
  }
  spec.workload.sweep_slo_search = 0;
  spec.name = "off";
  ListProposer p({"speed=fast"});
  SessionState s = Run(spec, &p);
  EXPECT_FALSE(s.sweep.empty());
  EXPECT_TRUE(s.slo_loads.empty());
}

TEST_F(SloTest, ViolatingStockDoesNotHideAFeasibleCandidate) {
  exec_.factors = {{"speed=fast", 1.20}};
  itl_ms = {{"stock", 60}, {"fast", 40}};
  ListProposer p({"speed=fast"});
  SessionState s = Run(SloSpec(), &p);
  ASSERT_EQ(s.candidates.size(), 1u);
  EXPECT_EQ(s.candidates[0].verdict, Verdict::kKeep) << s.candidates[0].reason;
  EXPECT_NE(s.best_slo.find("meets the SLO"), std::string::npos) << s.best_slo;
  EXPECT_EQ(s.slo_infeasible, "");
}

}  // namespace
}  // namespace hone::session
