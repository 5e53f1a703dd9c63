// Coordinator: the closed loop of one session, as phase sequencing.
//
//   Prelude   stock baseline + A/A noise floor, accuracy reference, warm replay of
//             the closest knowledge-base recipe, roofline
//   Framework enablement (if the stock configuration does not launch) then speed:
//             candidates from the proposer, each screened, accuracy-gated and
//             compared in paired interleaved trials (session/comparison.h)
//   Kernel    hands the best config to a kernel backend (skipped without one)
//   Sweep     re-measures best vs stock over the operating-point grid
//   Cycle     back to Framework while budget, ideas and gains remain (hard ceiling)
//   Close     always: final paired re-validation of best vs stock, stop reason,
//             report, summary, knowledge-base write
//
// Every decision is made from measured trials only (the executor's outcomes), and
// every verdict by session/comparison.h's Decide(); the coordinator gathers the
// evidence (screen, accuracy, pairs, critic) and adopts what was kept. The
// state is saved atomically after every trial and every event is appended to
// events.jsonl, so a killed session resumes (Coordinator over a loaded state) without
// losing anything validated. The wall-clock budget is hard: a trial is started only
// when it and the close (re-validation + report) still fit. Only this class runs
// benchmarks. Not thread-safe; one coordinator per run directory.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "measure/trial.h"
#include "search/proposer.h"
#include "session/comparison.h"
#include "session/ledger.h"
#include "session/services.h"
#include "session/state.h"
#include "spec/session_spec.h"
#include "sys/clock.h"

namespace hone::session {

class Coordinator {
 public:
  Coordinator(spec::SessionSpec spec, SessionServices services, SessionState state);
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Runs the session to its close (resuming where the state left off). The result
  // is the final state; errors are only for a state that cannot be saved.
  Result<SessionState> Run();
  const SessionState& state() const { return state_; }

  // A fresh state for a new session in `run_dir` (deadline stamped now).
  static SessionState NewState(const spec::SessionSpec& spec, const std::string& run_dir, sys::Clock& clock);
  // A session an interrupt closed (Ctrl-C, SIGTERM: a Slurm requeue) reopens in the
  // phase the interrupt stopped, for `hone resume`; its report is written again at its
  // new close. False (nothing changed) for a session that ran to its end.
  static bool Reopen(SessionState& state);

 private:
  // What stands against or for a candidate so far: its comparison (once run) and the
  // vetoes found around it. Decide(comparison, vetoes) is its verdict.
  struct Evidence {
    std::optional<ComparisonResult> comparison;
    std::vector<Veto> vetoes;
    Decision Decided() const { return Decide(comparison, vetoes); }
  };

  // Phases (coordinator.cc, prelude.cc); an error ends the phase (recorded) but
  // never the session.
  Status Prelude();
  Status Framework();
  Status Kernel();
  Status Sweep();
  // The variants a sweep point re-tunes (services_.point_variants, neither the stock
  // nor the best); none when re-tuning is off.
  std::vector<Config> RetuneVariants(const measure::OperatingPoint& p) const;
  Status RetunePoint(const measure::OperatingPoint& p, SweepPointRecord& rec);
  // With SLOs, after the grid: per ISL/OSL and arm, bisects the concurrency between the
  // grid's highest load within the SLO and the next that missed it (state_.slo_loads).
  Status SearchSloLoads();
  Status MeasureStockAt(const measure::OperatingPoint& p, SweepPointRecord& rec);
  // max(1, min_pairs) trials of one arm alone at a load, nothing compared: their ids and
  // the means of the objective, total tok/s and p50 interactivity. A trial that fails
  // to launch or runs invalid ends the run with ok = false (its id is the last one).
  struct AloneRun {
    std::vector<std::string> trials;
    bool ok = true;
    double objective = 0, tps = 0, intvty = 0;
  };
  Result<AloneRun> RunAlone(const Arm& arm, const measure::OperatingPoint& p);
  // One sweep comparison at a point: min_pairs pairs of a against b into `log`, judged at
  // one look, with each arm's mean total tok/s and p50 interactivity over its whole pairs.
  struct SweepPair {
    ComparisonResult comparison;
    double a_tps = 0, b_tps = 0, a_intvty = 0, b_intvty = 0;
  };
  Result<SweepPair> RunSweepPair(const Arm& a, const Arm& b, const measure::OperatingPoint& p, PairLog& log);
  Status CloseSession();
  // The stock violates an SLO and nothing found meets it: says so (state_.slo_infeasible,
  // an event, a progress line) with the closest configuration.
  void JudgeSloFeasibility();

  // The prelude's parts (prelude.cc).
  Status Baseline();  // the stock's A/A pairs (the warm replay rides along)
  PairPlan StockPairs(int pairs) const;
  Status Enable(const measure::TrialOutcome& failed);
  CandidateRecord* ReplayCandidate();
  Status MatchWarmRecipe();
  Status ReplayBesideBaseline();
  Status JudgeReplay();

  // One candidate (evaluate.cc).
  // Measures a candidate (screen, accuracy, pairs, critic) into `e`; never finishes it.
  Status Assess(CandidateRecord& c, Evidence& e);
  // Assess, then Finish with Decide's verdict.
  Status Evaluate(CandidateRecord& c);
  // Runs the accuracy gate for `c` and records it (detail, pass, event).
  Status CheckAccuracy(CandidateRecord& c);
  // A candidate's verdict is final: record and log it, adopt a KEEP as the new best,
  // tell the proposer.
  Status Finish(CandidateRecord& c, const Decision& d);
  // The paired-verdict settings of this session (noise floor included) for `looks`.
  measure::VerdictInput VerdictSettings(int looks, uint64_t seed = 1) const;
  int PlannedLooks() const;
  // KEEPs of this cycle's framework and kernel phases (they earn another cycle);
  // derived from the saved candidates, so a resumed session counts them too.
  int KeepsThisCycle() const;
  // How many measurements the screen's reference keeps: the last KEEP's (it set
  // best_values), else the baseline's; derived from the state like KeepsThisCycle.
  size_t ScreenReferenceSize() const;
  // Why this cycle's framework phase ended ("" when it has not run this cycle): its
  // budget share (kFrameworkBudgetNote: the sweep's reserve kept back), a plateau, the
  // proposer running dry... A cycle without a gain stops the session for that reason,
  // not for "convergence", when the search was cut short.
  std::string FrameworkNoteThisCycle() const;
  Status TryPatches();

  spec::SessionSpec spec_;
  SessionServices services_;
  SessionState state_;
  Ledger ledger_;  // refers to the three above
  int stock_failures_ = 0;  // failed stock trials in the prelude (one is retried)
  bool event_error_shown_ = false;
};

// Summary line for `hone status`.
std::string StatusText(const SessionState& state, const std::vector<Event>& events, double now_unix_s);

}  // namespace hone::session
