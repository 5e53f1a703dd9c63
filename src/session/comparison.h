// The paired comparison, and the one place a candidate's verdict is decided.
//
// RunComparison is the session's only A/B loop: arm A (the incumbent, the stock) and
// arm B (the candidate, the best) run alternately, A B A B ..., at one operating
// point, each pair sharing the machine's state at its moment. It is sequential: a
// verdict is judged after min_pairs pairs, then after every pair_step more while it
// is INCONCLUSIVE, up to max_pairs, each look at a Bonferroni-corrected confidence
// (measure/verdict.h). Before every pair it asks the runner whether two more trials
// fit the budget. Pairs live where the caller keeps them (PairLog: the session
// state's vectors, saved after every trial), so a comparison killed between its A
// and its B resumes by running only the missing B. The candidate's evaluation, the
// sweep's operating points, the close's re-validation and the A/A baseline (no
// verdict: it measures the noise floor) all run through it.
//
// Decide is the only place a verdict is decided: from what the comparison measured
// and the vetoes gathered around it (a screening drop, a launch failure or an invalid
// run, an SLO violation, the accuracy gate, the critic, the budget, the patch lane).
// A veto can only make the outcome more conservative: the critic's refusal and an
// uncommitted patch turn down a measured KEEP and nothing else; no veto creates one.
//
// Pure logic over the TrialRunner seam; not thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/verdict.h"
#include "measure/trial.h"
#include "measure/verdict.h"

namespace hone::session {

// One arm: what runs, on which build, under which trial role.
struct Arm {
  measure::TrialRole role = measure::TrialRole::kCandidate;
  Config config;
  std::string server_binary;  // "" = the provisioned build
};

// Where a comparison's measurements are kept (the caller's vectors). Index i of the
// two arms is pair i; an A whose B is missing is a half pair (a kill between them).
class PairLog {
 public:
  PairLog(std::vector<std::string>& a_trials, std::vector<double>& a_values, std::vector<std::string>& b_trials,
          std::vector<double>& b_values)
      : a_trials_(a_trials), a_values_(a_values), b_trials_(b_trials), b_values_(b_values) {}

  int pairs() const;       // whole pairs
  bool half_pair() const;  // an A waits for its B
  // The whole pairs' values (a half pair left out).
  std::vector<double> a() const;
  std::vector<double> b() const;
  // B / A of each whole pair (pairs whose A is not positive left out).
  std::vector<double> Ratios() const;
  // The whole pairs' trial ids in the order they ran: A1 B1 A2 B2 ...
  std::vector<std::string> Interleaved() const;

  void AddA(const measure::TrialOutcome& o);
  void AddB(const measure::TrialOutcome& o);

 private:
  std::vector<std::string>& a_trials_;
  std::vector<double>& a_values_;
  std::vector<std::string>& b_trials_;
  std::vector<double>& b_values_;
};

// What a comparison needs from the session: trials that are numbered, logged and
// saved (the coordinator), the budget, and a progress line.
class TrialRunner {
 public:
  virtual ~TrialRunner() = default;
  virtual Result<measure::TrialOutcome> RunTrial(const Arm& arm, const measure::OperatingPoint& point) = 0;
  // Whether `trials` more trials fit the budget (the session's one budget rule).
  virtual bool CanAfford(int trials) const = 0;
  // Persists the state after a trial joined the log.
  virtual Status Save() = 0;
  virtual void Progress(const std::string& line) = 0;
};

struct PairPlan {
  Arm a, b;
  measure::OperatingPoint point;
  int min_pairs = 3;
  int max_pairs = 9;  // = min_pairs: a fixed number of pairs
  int pair_step = 3;
  // The verdict's settings (its a and b are ignored; looks = planned looks, see
  // PlannedLooks). Unset: no verdict, exactly min_pairs pairs (the A/A baseline).
  std::optional<measure::VerdictInput> judge;
  // Pairs of earlier comparisons this one continues (pool_retests): judged ahead of the
  // log's own, with their looks added to the judge's for the Bonferroni correction.
  // The log, the pair counts and min_pairs are this comparison's own.
  std::vector<double> prior_a, prior_b;
  int prior_looks = 0;
  bool slo_veto = false;  // a B that violates an SLO ends the comparison (candidates)
  std::string label;      // names an inconclusive look in the progress ("" = quiet)
  // Optional hooks.
  std::function<Status()> between;  // after each A, before its B (the warm replay rides here)
  std::function<void(const measure::TrialOutcome&, bool b_arm)> on_trial;  // each trial added to the log
  std::function<bool(const measure::TrialOutcome&)> retry;                 // a failed trial: true = run that arm again
};

// Looks a sequential comparison plans: min_pairs, then every pair_step up to max_pairs.
int PlannedLooks(int min_pairs, int max_pairs, int pair_step);

// Direction-adjusted "value is better than reference by" (0.05 = 5% better); 0 when
// either is not positive.
double RelativeGain(double value, double reference, bool maximize);

// The screen's reference (measurement.screen_recheck): the incumbent's latest trials, at
// most `keep` of them. One more incumbent trial joins it (the oldest leaves); a trial
// more than `tolerance` off the reference's mean (direction-adjusted) restarts it: the
// host moved, and what it measured before is no reference now. `ids` (may be null)
// follows `values`. The session (Coordinator::Assess) and the replay
// (lab::SurfaceSession) share it.
void AddToScreenReference(std::vector<double>& values, std::vector<std::string>* ids, double fresh,
                          const std::string& id, size_t keep, double tolerance, bool maximize);

enum class ComparisonEnd {
  kComplete,     // decided at a look, or at the last planned look; A/A: all pairs measured
  kBudget,       // no budget for another pair (judged when at least min_pairs were measured)
  kFailedA,      // an A trial did not launch or ran invalid (and was not retried)
  kFailedB,      // a B trial did not launch or ran invalid (and was not retried)
  kSloViolated,  // a B violated an SLO (plan.slo_veto); it is in the log
};

struct ComparisonResult {
  ComparisonEnd end = ComparisonEnd::kComplete;
  int pairs = 0;                                 // whole pairs in the log
  std::optional<measure::VerdictResult> judged;  // the last look (unset: none was reached)
  std::optional<measure::TrialOutcome> failed;   // the trial that ended it (kFailed*, kSloViolated)
};

// Runs pairs until the plan is decided, the budget ends it or a trial fails.
// Errors are the runner's (an interrupt, a state that cannot be saved); the log keeps
// what was measured until then.
Result<ComparisonResult> RunComparison(TrialRunner& runner, const PairPlan& plan, PairLog& log);
// The verdict over the log's whole pairs under the plan's settings (plan.judge set).
measure::VerdictResult JudgePairs(const PairPlan& plan, const PairLog& log);

// A reason to turn a candidate down, found before, during or after its comparison.
enum class VetoKind {
  kBudget,         // not enough budget to measure it           -> SKIPPED_BUDGET
  kScreenDrop,     // its screening trial was far worse         -> SCREENED_OUT
  kLaunchFailed,   // a trial of it did not launch              -> LAUNCH_FAILED
  kInvalidRun,     // a trial of it is not a result             -> INVALID
  kFaulted,        // a trial of it faulted, and again when measured once more
                   // (the server or the transport misbehaved)  -> INVALID
  kSloViolated,    // a trial of it violated an SLO             -> REVERT
  kAccuracy,       // the accuracy gate failed                  -> ACCURACY_FAILED
  kCritic,         // the critic refused a measured KEEP        -> REVERT (a KEEP only)
  kNotCommitted,   // the patch lane did not commit a KEEP      -> REVERT (a KEEP only)
  kPatchFailed,    // the patch lane failed before a measurement -> PATCH_FAILED
  kBuildFailed,    // the patched tree did not build            -> BUILD_FAILED
  kPatchRejected,  // the gate or validation refused the diff   -> PATCH_REJECTED
  kInterrupted,    // a measurement cut by an interrupt or the session's deadline -> INCONCLUSIVE
};

struct Veto {
  VetoKind kind = VetoKind::kInvalidRun;
  std::string reason;  // the detail; Decide words the final reason
};

struct Decision {
  Verdict verdict = Verdict::kPending;
  std::string reason;
};

// The veto a failed trial carries: LAUNCH_FAILED (kind: detail), a fault (its
// retry faulted too: INVALID), INVALID, or an SLO violation. A faulted trial is never
// valid, so it never reaches a verdict's values.
Veto TrialVeto(const measure::TrialOutcome& o);

// The failure kind a failed candidate trial (one TrialVeto accepts) gives its candidate
// (CandidateRecord, search::Observation), from the trial's veto: the launch failure's
// kind; for an invalid run (VetoKind::kInvalidRun), search::kNoValidRunPrefix and the
// veto's reason; empty otherwise (a fault, an SLO violation).
std::string CandidateFailureKind(const measure::TrialOutcome& o);

// The one place a verdict is decided. `comparison` is the paired comparison's result
// (unset when a veto stopped the candidate before any pair). The comparison says what
// was measured (KEEP, REVERT, INCONCLUSIVE, or the failure that ended it); then the
// vetoes, in the order they were found: the first that applies decides. The critic's
// refusal and an uncommitted patch apply only to a measured KEEP. With neither a
// comparison nor a veto there is nothing to decide (a bug).
Decision Decide(const std::optional<ComparisonResult>& comparison, const std::vector<Veto>& vetoes);

}  // namespace hone::session
