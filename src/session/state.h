// SessionState: everything a session has decided so far, small enough to rewrite
// atomically after every trial (state.json), plus the append-only audit trail
// (events.jsonl). Together with the trial directories they are the whole truth of a
// session: `hone resume` rebuilds the coordinator from them and `hone status` reads
// them while a session runs. Every number in here names the trials that measured it.
// Documented field by field in docs/session-state.md. Plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/verdict.h"
#include "measure/accuracy.h"

namespace hone::session {

// The session's phases, in order (Prelude -> Framework -> Kernel -> Sweep -> (cycle)
// -> Close -> Done). Names are the text in state.json and events.jsonl.
enum class Phase { kPrelude, kFramework, kKernel, kSweep, kClose, kDone };
std::string_view PhaseName(Phase phase);
Result<Phase> ParsePhase(std::string_view name);

// How a phase's record ended (or that it is still open).
enum class PhaseStatus { kRunning, kDone, kSkipped, kFailed, kInterrupted };
std::string_view PhaseStatusName(PhaseStatus status);
Result<PhaseStatus> ParsePhaseStatus(std::string_view name);

// Where a candidate came from: the warm replay (prelude), the enablement ladder, the
// search and source patches (framework), or the kernel lane.
enum class CandidatePhase { kPrelude, kEnablement, kFramework, kKernel };
std::string_view CandidatePhaseName(CandidatePhase phase);
Result<CandidatePhase> ParseCandidatePhase(std::string_view name);

// One candidate configuration and what became of it.
struct CandidateRecord {
  std::string id;           // "c003"
  CandidatePhase phase = CandidatePhase::kFramework;
  int cycle = 0;
  std::string idea;         // the proposer's idea id / title
  std::string rationale;
  Config delta;             // relative to the incumbent it was tested against
  Config config;            // the full configuration
  Config incumbent;         // the configuration it was compared with
  // PENDING while being measured; then its one final verdict (core/verdict.h).
  Verdict verdict = Verdict::kPending;
  std::string reason;
  double gain = 0;          // relative to the incumbent (direction-adjusted)
  double ci_lo = 0, ci_hi = 0;
  double threshold = 0;
  int pairs = 0;
  std::vector<std::string> incumbent_trials;  // A arm, pair order
  std::vector<std::string> candidate_trials;  // B arm (and the screening trial)
  std::vector<double> incumbent_values;
  std::vector<double> candidate_values;
  std::string screen_trial;
  // The incumbent measured again before this candidate's screen drop was judged
  // (measurement.screen_recheck): its trial id ("" = none).
  std::string recheck_trial;
  // Earlier INCONCLUSIVE candidates of the same configuration against the same
  // incumbent whose pairs its verdict pools (measurement.pool_retests); gain, interval
  // and pairs are then over theirs and its own together.
  std::vector<std::string> pooled_with;
  std::string failure_kind;
  std::string accuracy;     // accuracy gate detail ("" = not run)
  bool accuracy_passed = true;
  double predicted_gain = 0;  // a proposer's or agent's claim (never a result)
  std::string critic;           // the critic's review of the verdict ("" = none)
  std::string critic_learning;  // the lesson it drew (the knowledge base keeps it as a note)
  // The SLOs on the requests pooled over its screening and B trials ("" = not
  // checked: no SLO, or not measured far enough); slo_excess: the largest relative
  // miss (0 = met; -1 = not checked).
  std::string slo;
  double slo_excess = -1;
  std::string patch;            // a source patch's id (its diff is under patches/)
  int64_t recipe_id = 0;        // the knowledge-base recipe a warm replay re-measures (0: none)
  std::string server_binary;    // the build the candidate runs ("" = provisioned)
  std::string incumbent_binary; // the build the incumbent runs
  double started_s = 0, finished_s = 0;  // session time
  // What it changed, for people: its knob delta, and its source patch when it has one
  // ("patch s1-more-default-slots", "parallel=8 + patch p1-fix"); a patch with stock
  // flags is not "(stock)".
  std::string Change() const;
};

// " on build llama-server-s1-x" for a build other than the provisioned one ("" otherwise);
// the build directory's generic binary is named by its path.
std::string BuildNote(const std::string& server_binary);

struct PhaseRecord {
  Phase phase = Phase::kPrelude;
  int cycle = 0;
  double started_s = 0, finished_s = -1;
  PhaseStatus status = PhaseStatus::kRunning;
  std::string note;
};

// The framework phase's note when it stops for the budget before its proposer ran dry.
inline constexpr char kFrameworkBudgetNote[] = "budget";
// The start of its note when search.plateau candidates in a row found no KEEP
// ("plateau: 8 candidates without a KEEP").
inline constexpr char kFrameworkPlateauNote[] = "plateau: ";

// The sweep phase's note names the operating points the budget left out after this.
inline constexpr char kSweepUnmeasured[] = "not measured: ";

struct SweepPointRecord {
  int concurrency = 0;
  int64_t isl = 0, osl = 0;
  std::string best_config;    // Config::ToString of the winner at this point
  double stock_objective = 0, best_objective = 0;
  double stock_intvty = 0, best_intvty = 0;  // p50 interactivity (tok/s/user)
  double stock_tps = 0, best_tps = 0;        // total tok/s
  std::vector<std::string> stock_trials, best_trials;
  std::string stock_slo, best_slo;  // pooled SLO status per arm ("" = no SLO)
  double stock_slo_excess = -1, best_slo_excess = -1;  // largest relative miss (0 = met, -1 = not checked)
  std::optional<Verdict> verdict;  // KEEP, REVERT, INCONCLUSIVE or INVALID; unset: not measured
  // Re-tuned at this point: a variant of the point's winner (stock or best) measured
  // paired against it. A KEEP makes it the point's best: best_config, best_objective,
  // best_tps, best_intvty and best_slo are then the variant's, from retune_trials.
  std::string retune_config;
  std::string retune_against;  // the winner it was measured against ("" = stock)
  std::vector<std::string> retune_base_trials, retune_trials;
  std::optional<Verdict> retune_verdict;
  double retune_gain = 0;
};

// The highest load within the SLO, bisected (issue 18.2): for one ISL/OSL and one arm
// (the stock, or the session's best), between the grid's highest concurrency at which
// the arm met every SLO (`lo` starts there) and the next grid concurrency at which it
// missed (`hi` starts there); each probe measures the arm alone at a concurrency in
// between (min_pairs trials, the SLO judged on their pooled requests) and moves one
// end. `lo` is the answer; hi - lo > 1 when the probes or the budget ran out first.
struct SloLoadProbe {
  int concurrency = 0;
  std::vector<std::string> trials;
  bool met = false;
  double excess = -1;  // the largest relative miss (0 = met)
  double tps = 0;      // mean total tok/s of its trials
  std::string slo;     // PooledSlo::Describe
};
struct SloLoadSearch {
  int64_t isl = 0, osl = 0;
  std::string arm;     // "stock" or "best"
  std::string config;  // Config::ToString of the arm
  int grid_lo = 0, grid_hi = 0;  // the grid's bracket
  double grid_lo_tps = 0;
  int lo = 0, hi = 0;            // after the probes
  std::vector<SloLoadProbe> probes;
  std::string note;  // why it stopped before hi - lo == 1 ("" = it did not)
  double LoTps() const {
    for (auto it = probes.rbegin(); it != probes.rend(); ++it) {
      if (it->met && it->concurrency == lo) return it->tps;
    }
    return grid_lo_tps;
  }
};

struct SessionState {
  int version = 1;
  std::string session_id;
  std::string name;
  std::string spec_path;
  std::string run_dir;
  int64_t started_unix_us = 0;
  double deadline_unix_s = 0;  // stamped once: a resume cannot reissue the budget
  Phase phase = Phase::kPrelude;
  int cycle = 1;
  std::string stop_reason;
  bool interrupted = false;
  // The phase an interrupt stopped (the session closed with a report); `hone resume`
  // reopens the session there (Reopen). Empty when the session ran to its end.
  std::optional<Phase> interrupted_in;

  std::string warmup_trial;     // discarded first launch (page cache, lazy init)
  Config stock;                 // the configuration everything is compared with
  std::string stock_note;       // enablement changes applied to make it launch
  std::vector<std::string> baseline_trials;
  std::vector<double> baseline_values;
  double baseline_objective = 0;
  double noise_floor = 0;
  std::vector<std::string> aa_trials;  // the second arm of the A/A pairs
  std::vector<double> aa_values;

  Config best;
  std::string server_binary;  // the build `best` runs on ("" = provisioned; set by a kept patch)
  std::vector<std::string> best_trials;  // the latest measurements of `best`
  std::vector<double> best_values;       // the screen's reference: their values
  // The screen drops since the last re-check of that reference (measurement.screen_recheck).
  int screen_drops_in_row = 0;

  std::vector<CandidateRecord> candidates;
  std::vector<PhaseRecord> phases;
  std::vector<SweepPointRecord> sweep;
  std::string last_sweep_config;  // best config hash when the last sweep ran
  std::vector<SloLoadSearch> slo_loads;  // the sweep's bisection of the load at SLO

  // Close: `best` re-measured against `stock`, paired.
  bool validated = false;
  double validated_gain = 0, validated_lo = 0, validated_hi = 0;
  double validated_best_objective = 0, validated_stock_objective = 0;
  std::vector<std::string> validation_trials;
  // The close's pairs as they are measured, saved after every trial, so that a session
  // killed during the close resumes its validation where it stopped (a half pair
  // waits for its B) instead of starting it again.
  struct ClosePairs {
    std::vector<std::string> a_trials, b_trials;
    std::vector<double> a_values, b_values;
    double best_total_sum = 0, best_output_sum = 0;  // over the B trials: the best's roofline
  } close_pairs;
  std::optional<Verdict> validation_verdict;  // KEEP, REVERT, INCONCLUSIVE or NOT_VALIDATED; unset: not run
  std::string close_accuracy;
  // The accuracy gate: probes, method, thresholds in force and the stock's A/A spread.
  measure::AccuracyGateInfo accuracy_gate;

  // SLOs (objective.slo), each judged on requests pooled over a config's trials.
  std::string stock_slo;        // the stock's, over its baseline and A/A trials ("" = no SLO)
  double stock_slo_excess = -1; // largest relative miss (0 = met, -1 = not checked)
  std::string best_slo;         // the best's at close, over its validation trials
  double best_slo_excess = -1;
  // Said at the end when the stock violates an SLO and no configuration found meets
  // it: which SLO, and the closest configuration measured ("" = feasible, or no SLO).
  std::string slo_infeasible;

  std::string warm_replay;   // what the knowledge base offered and what became of it
  std::string kb_result;     // what was written to the knowledge base
  std::string kernel;        // what the kernel backend did
  std::string agents;        // agent usage, calibration and rejections (when agents ran)
  std::string roofline;      // headroom summary (when available)
  bool roofline_saturated = false;
  double roofline_ratio = 0;   // stock measured / bound (0: unknown)
  std::string roofline_bound;  // the stock's bound class (search evidence)
  // Means over the stock trials of the bench metrics the search diagnoses from
  // (mean_ttft_ms, mean_tpot_ms, kv_usage_max, queue_depth_mean, running_mean).
  std::map<std::string, double> baseline_metrics;
  std::map<std::string, int> baseline_metric_trials;  // how many stock trials reported each
  double baseline_total_tps = 0, baseline_output_tps = 0;  // means over the stock trials
  std::string search_state;  // the proposer's saved tree (opaque)
  // Launch conflicts the search learned from this session's failures (values that do
  // not launch together, each a sub-configuration): recorded with the recipe.
  std::vector<Config> learned_conflicts;

  int next_trial = 1;
  int next_candidate = 1;
  int trials_run = 0;
  double trial_seconds_total = 0;
  double longest_trial_s = 0;         // the longest valid trial: the close's per-trial estimate
  int builds_run = 0;                 // patched-tree builds (the patch lane's rebuilds)
  double build_seconds_total = 0;     // their time: the budget's estimate of the next
  int accuracy_checks_run = 0;        // accuracy gate runs (probes, and KL via llama-perplexity)
  double accuracy_seconds_total = 0;  // their session-clock time: the budget's estimate of the next
  // Set by LoadState when state.json was damaged and the previous save replaced it
  // (what happened, for the user and the event log); never saved.
  std::string recovered;

  CandidateRecord* Pending();  // the candidate still being measured, or nullptr
  // True while nothing (no knob, no patch) has replaced the stock configuration.
  bool BestIsStock() const { return best == stock && server_binary.empty(); }
  // The best's knobs and, when it runs a patched build, which ("(stock) on build ...").
  std::string BestText() const { return best.ToString() + BuildNote(server_binary); }
};

std::string StateToJson(const SessionState& s);
Result<SessionState> StateFromJson(const std::string& text);
// Writes state.json atomically; the previous state.json stays as state.json.prev.
Status SaveState(const std::string& run_dir, const SessionState& s);
// Reads state.json. A damaged one (edited, or corrupted outside hone) is an error
// naming the damage, unless state.json.prev is whole: then the session resumes from
// that previous save (`recovered` says so), its next trial id past every trial
// directory on disk, so no trial's evidence is overwritten.
Result<SessionState> LoadState(const std::string& run_dir);

// events.jsonl: one JSON object per line, appended and fsynced.
class EventLog {
 public:
  explicit EventLog(std::string path) : path_(std::move(path)) {}
  // `fields` are key/value strings (values that parse as numbers are written as numbers).
  Status Append(const std::string& type, double session_s,
                const std::vector<std::pair<std::string, std::string>>& fields = {});
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int64_t seq_ = -1;
};

struct Event {
  int64_t seq = 0;
  std::string type;
  double t = 0;
  std::vector<std::pair<std::string, std::string>> fields;
  std::string Get(const std::string& key) const;
};
// Reads events.jsonl. A line that is not a whole event (a torn last line after a
// crash, or damage) is skipped and its 1-based number added to `damaged`.
Result<std::vector<Event>> ReadEvents(const std::string& path, std::vector<int>* damaged = nullptr);

// The accuracy gate's record as one JSON object ("null" when it was not prepared), as
// state.json and summary.json hold it.
std::string AccuracyGateJson(const measure::AccuracyGateInfo& gate);

}  // namespace hone::session
