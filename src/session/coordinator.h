// Coordinator: the closed loop of one session.
//
//   Prelude   stock baseline + A/A noise floor, accuracy reference, warm replay of
//             the closest knowledge-base recipe, roofline
//   Framework enablement (if the stock configuration does not launch) then speed:
//             candidates from the proposer, each screened, accuracy-gated and judged
//             from paired interleaved trials (measure/verdict.h)
//   Kernel    hands the best config to a kernel backend (skipped without one)
//   Sweep     re-measures best vs stock over the operating-point grid
//   Cycle     back to Framework while budget, ideas and gains remain (hard ceiling)
//   Close     always: final paired re-validation of best vs stock, stop reason,
//             report, summary, knowledge-base write
//
// Every decision is made from measured trials only (the executor's outcomes); the
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
#include "measure/verdict.h"
#include "search/proposer.h"
#include "session/state.h"
#include "spec/session_spec.h"
#include "sys/clock.h"

namespace hone::session {

struct WarmCandidate {
  Config config;
  double recorded_gain = 0;
  std::string explanation;
  int64_t recipe_id = 0;
};

// How the replay of a recipe went in this session.
struct ReplayResult {
  std::string verdict;                 // KEEP, INCONCLUSIVE, REVERT, ACCURACY_FAILED, LAUNCH_FAILED, ...
  double gain = 0;                     // vs this session's stock baseline
  bool accuracy_passed = true;
  std::vector<std::string> trial_ids;  // the replay's own trials
  std::string detail;
  std::string session_id;
};

// The knowledge base as the coordinator sees it. The knowledge base alone decides
// whether a replay reproduced its recipe (or, at another operating point, transferred);
// RecordReplay returns that judgment in words for the report.
class WarmStart {
 public:
  virtual ~WarmStart() = default;
  virtual std::optional<WarmCandidate> Match(std::string* explanation) = 0;
  virtual std::string RecordReplay(const WarmCandidate& c, const ReplayResult& r) = 0;
};

// A kernel backend as the coordinator sees it: given the best config, returns
// candidate configurations that enable verified kernels (measured end to end here).
class KernelLane {
 public:
  virtual ~KernelLane() = default;
  // `note` receives what the backend did (for the report), whatever it returns.
  virtual Result<std::vector<search::Candidate>> Propose(const SessionState& state, std::string* note) = 0;
};

// Source patches (user-given diffs or backports): applied in an isolated worktree,
// rebuilt, measured through the coordinator and committed or reverted (patch/).
struct PatchIdea {
  std::string id;
  std::string title;
};
struct PatchResult {
  std::string status;   // kept | reverted | rejected | build_failed | error
  std::string reason;
  std::string binary;   // when kept: a persistent copy of the patched server binary
  std::string diffstat;
  std::string stopped_by;  // the policy rule or check that stopped it
  double build_seconds = 0;
};
class PatchLane {
 public:
  virtual ~PatchLane() = default;
  virtual std::vector<PatchIdea> Pending(const SessionState& state) = 0;
  // Applies and builds the patch, calls `measure` with the built binary (true = keep),
  // and commits or reverts accordingly.
  virtual Result<PatchResult> Try(const PatchIdea& idea,
                                  const std::function<Result<bool>(const std::string& binary)>& measure) = 0;
};

// Writes the report, summary and knowledge-base recipe at close.
class Closer {
 public:
  virtual ~Closer() = default;
  virtual Status Close(SessionState& state) = 0;
};

// What the roofline analysis says about a measured configuration.
struct RooflineNote {
  std::string summary;     // one line: bound, measured/bound, bound class
  double ratio = 0;        // measured / bound
  bool saturated = false;  // at the ceiling: another cycle cannot help
  std::string bound_class; // compute | memory_bandwidth | kv_capacity | overhead
};

struct CriticNote {
  bool approve = true;
  std::string reason;
  std::string learning;
  std::string signature;
};

struct SessionServices {
  measure::TrialExecutor* executor = nullptr;
  search::Proposer* proposer = nullptr;
  sys::Clock* clock = nullptr;
  WarmStart* warm_start = nullptr;  // optional
  KernelLane* kernel = nullptr;     // optional
  PatchLane* patches = nullptr;     // optional
  Closer* closer = nullptr;         // optional
  // Whether changing these knobs can change outputs (the catalog's accuracy risk).
  std::function<bool(const Config& delta)> risky;
  // Enablement ladder: configuration changes to try for a launch failure kind.
  std::function<std::vector<Config>(const std::string& failure_kind)> enablement;
  std::function<void(const std::string& line)> progress;
  // A critic reviewing every measured verdict (optional). It can only make an
  // outcome more conservative: a refusal turns a measured KEEP into REVERT; an
  // approval never creates a KEEP. Errors mean "no review" (recorded).
  std::function<Result<CriticNote>(const CandidateRecord& c)> critic;
  // Roofline analysis of a configuration's measured throughput (optional).
  std::function<Result<RooflineNote>(const Config& config, double total_tps, double output_tps)> roofline;
  int cpus = 1;
  bool gpu = false;
};

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

 private:
  // Phases; an error ends the phase (recorded) but never the session.
  Status Prelude();
  // Warm replay, fused with the baseline (see Prelude).
  CandidateRecord* ReplayCandidate();
  Status MatchWarmRecipe();
  Status RunReplayTrial(CandidateRecord& r);
  Status Finish(CandidateRecord& c, const std::string& verdict, const std::string& reason);
  Status Framework();
  Status Kernel();
  Status Sweep();
  Status CloseSession();

  Status Enable(const measure::TrialOutcome& failed);
  // Measures a candidate (screen, accuracy, pairs) and sets its verdict.
  Status Evaluate(CandidateRecord& c);
  Status Judge(CandidateRecord& c, bool final_look);
  // The verdict's input for paired values under this session's measurement settings.
  measure::VerdictInput PairedInput(std::vector<double> a, std::vector<double> b, int looks) const;
  // Looks a sequential judgment plans: min_pairs, then every pair_step up to max_pairs.
  int PlannedLooks() const;
  // Runs a trial; a faulted one (measure::TrialOutcome::faults) is run once more.
  Result<measure::TrialOutcome> RunTrial(const std::string& role, const Config& config, const measure::OperatingPoint& p,
                                         const std::string& server_binary);
  Result<measure::TrialOutcome> RunTrialOnce(const std::string& role, const Config& config,
                                             const measure::OperatingPoint& p, const std::string& server_binary,
                                             const std::string& retry_of);
  Result<measure::TrialOutcome> RunTrial(const std::string& role, const Config& config, const measure::OperatingPoint& p) {
    return RunTrial(role, config, p, state_.server_binary);
  }
  Status TryPatches();

  CandidateRecord& NewCandidate(const std::string& phase, const search::Candidate& idea, const Config& incumbent);
  void Observe(const CandidateRecord& c);
  void StartPhase(const std::string& phase);
  void EndPhase(const std::string& status, const std::string& note);
  Status Save();
  void Event(const std::string& type, std::vector<std::pair<std::string, std::string>> fields = {});
  void Progress(const std::string& line);

  double Now() const;        // session seconds
  double Left() const;       // seconds until the deadline
  double EstTrial() const;   // expected seconds per trial
  double CloseReserve() const;
  bool CanAfford(int trials) const;
  bool Stopping() const;     // interrupt, budget or trial limit
  measure::OperatingPoint Primary() const;
  std::string NextTrialId();

  spec::SessionSpec spec_;
  SessionServices services_;
  SessionState state_;
  EventLog events_;
  int keeps_this_cycle_ = 0;
  int stock_failures_ = 0;  // failed stock trials in the prelude (one is retried)
  bool event_error_shown_ = false;
};

// Summary line for `hone status`.
std::string StatusText(const SessionState& state, const std::vector<Event>& events, double now_unix_s);

}  // namespace hone::session
