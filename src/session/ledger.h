// Ledger: a session's bookkeeping. It numbers and runs trials (saving the state
// before each, so a crash never reuses an id), appends events, opens and closes phase
// records and candidates, tells the time left, and holds the one budget rule. It is
// the TrialRunner every paired comparison runs on (session/comparison.h).
//
// The ledger refers to the coordinator's spec, services and state (it owns none of
// them) and owns the event log. Not thread-safe.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "measure/trial.h"
#include "search/proposer.h"
#include "session/comparison.h"
#include "session/services.h"
#include "session/state.h"
#include "spec/session_spec.h"

namespace hone::session {

// One number, printf-formatted ("%+.1f%%"), for events and progress lines.
std::string Fmt(const char* fmt, double v);

class Ledger final : public TrialRunner {
 public:
  Ledger(const spec::SessionSpec& spec, const SessionServices& services, SessionState& state);
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  // A numbered, logged trial of `arm` (the state is saved first). A launched trial
  // that faulted (measure::TrialOutcome::faults: the server or the transport
  // misbehaved) measured nothing about its configuration: it is run once more
  // (`retry_of`), and a second fault stands: an invalid trial, which RunComparison
  // ends on and Decide turns into INVALID (VetoKind::kFaulted). Warm-ups are not retried.
  Result<measure::TrialOutcome> RunTrial(const Arm& arm, const measure::OperatingPoint& point) override;
  Result<measure::TrialOutcome> RunTrial(measure::TrialRole role, const Config& config,
                                         const measure::OperatingPoint& point, const std::string& server_binary = "") {
    return RunTrial(Arm{role, config, server_binary}, point);
  }
  // The one budget rule. Before the close: the trial limit, and time for `trials`
  // more trials plus the close's reserve (its re-validation and the report). In the
  // close: time for them and the report's margin; an interrupt stops it.
  bool CanAfford(int trials) const override { return CanAfford(trials, 0); }
  // The rule with `extra_s` more seconds of other work first (a rebuild).
  bool CanAfford(int trials, double extra_s) const;
  // Seconds left for work other than `trials` trials, after the close's reserve (what a
  // rebuild may take before those trials): the largest extra_s CanAfford allows.
  double LeftBeyond(int trials) const;
  // The same rule for one accuracy check (the gate's probes and its KL divergence run),
  // whose cost is estimated from the checks run so far.
  bool CanAffordAccuracy() const;
  // One accuracy check of `config`, timed on the session clock for that estimate.
  Result<measure::AccuracyOutcome> RunAccuracy(const Config& config, const std::string& label,
                                               const std::string& server_binary);
  // Writes state.json (with the proposer's saved search).
  Status Save() override;
  void Progress(const std::string& line) override;
  void Event(const std::string& type, std::vector<std::pair<std::string, std::string>> fields = {});

  void StartPhase(Phase phase);  // a resumed phase continues its open record
  void EndPhase(PhaseStatus status, const std::string& note);
  CandidateRecord& NewCandidate(CandidatePhase phase, const search::Candidate& idea, const Config& incumbent);
  CandidateRecord* FindCandidate(const std::string& id);

  // The objective's SLOs judged on the requests pooled over these trials (the valid
  // ones; a trial run before a resume is read back from its directory).
  measure::PooledSlo SloOf(const std::vector<std::string>& trial_ids);
  // SloOf, recorded as an "slo" event naming what was judged (e.g. {"candidate", "c003"}).
  measure::PooledSlo JudgeSlo(const std::vector<std::string>& trial_ids, const std::string& subject_key,
                              const std::string& subject);
  bool HasSlo() const { return !spec_.objective.slos.empty(); }

  double Now() const;                       // session seconds
  double Left() const;                      // seconds until the deadline
  double EstTrial() const;                  // expected seconds per trial
  double EstAccuracy() const;               // expected seconds per accuracy check
  bool Stopping() const;                    // interrupt or trial limit
  measure::OperatingPoint Primary() const;  // the spec's workload point

 private:
  double CloseReserve() const;
  std::string NextTrialId();
  Result<measure::TrialOutcome> RunTrialOnce(const Arm& arm, const measure::OperatingPoint& point,
                                             const std::string& retry_of);

  const spec::SessionSpec& spec_;
  const SessionServices& services_;
  SessionState& state_;
  EventLog events_;
  std::map<std::string, bench::BenchResult> results_;  // the valid trials' results, by id
  bool event_error_shown_ = false;  // a lost event is reported once (a full disk fails every append)
};

}  // namespace hone::session
