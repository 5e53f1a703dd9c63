// AgentProposer: a search::Proposer whose ideas come from the orchestrator role.
//
// Next() hands out queued ideas; when the queue is empty it runs one orchestrator turn
// with a snapshot rebuilt from the proposal context, its own measured history and the
// session facts a SnapshotFiller adds (baseline, validated gain, idea tree). Every
// idea must be a valid knob delta before it reaches the coordinator: known catalog
// knobs only, searchable, for this device, not part of the workload contract, legal
// values, a full configuration the catalog accepts, something that changes the best,
// and not a configuration already measured. Anything else is a structured
// IdeaRejection (rule id + message), fed back into the orchestrator's memory, never a
// candidate.
//
// The agent's predicted gain travels as search::Candidate::expected_gain (a claim the
// coordinator records as predicted_gain) and lands in the calibration table next to
// the measured gain; it never orders, filters or decides anything.
//
// When the agent cannot help (credentials rejected, the spending cap reached, turns
// without a valid idea, the turn limit) the proposer falls back to the deterministic
// proposer given (e.g. CatalogProposer), so a session never depends on an LLM. Every
// observation is forwarded to the fallback too. After each observation the
// deterministic detectors (robustness.h) run; when one fires the robustness role (or
// DefaultRecovery) picks a recovery, which changes only what is proposed next.
//
// Save()/Load() carry everything (queue, history, rejections, calibration, the
// fallback's own state) through a resume. Not thread-safe. The orchestrator,
// catalog, fallback and robustness role must outlive it.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/orchestrator.h"
#include "agent/robustness.h"
#include "search/proposer.h"
#include "sys/clock.h"
#include "target/catalog.h"

namespace hone::agent {

struct AgentProposerOptions {
  int ideas_per_turn = 3;
  int max_failed_turns = 3;   // turns in a row without a valid idea -> fallback
  int max_turns = 40;         // orchestrator turns per session
  std::vector<std::string> protected_knobs;  // the workload contract (policy knob.workload_contract)
  std::vector<std::string> only;             // restrict to these knobs (empty: all searchable)
  std::vector<std::string> exclude;
  std::string objective = "throughput (tok/s)";
  sys::Clock* clock = nullptr;  // session time for the stall detector (optional)
};

struct IdeaRejection {
  int turn = 0;
  std::string title;
  std::string delta;    // as proposed: "knob=value ..."
  std::string rule;     // agent.unknown_knob, agent.bad_value, ...
  std::string message;  // one line
};

struct CalibrationRow {
  std::string idea;
  std::string delta;
  bool has_claim = false;
  double claimed_gain = 0;   // fraction, the agent's claim
  Verdict verdict = Verdict::kPending;  // measured by the coordinator
  double measured_gain = 0;  // fraction, measured
};

class AgentProposer final : public search::Proposer {
 public:
  using SnapshotFiller = std::function<void(OrchestratorSnapshot&)>;

  AgentProposer(Orchestrator& orchestrator, const target::KnobCatalog& catalog, AgentProposerOptions options,
                search::Proposer* fallback = nullptr, Robustness* robustness = nullptr);
  void SetSnapshotFiller(SnapshotFiller fill) { fill_ = std::move(fill); }

  std::optional<search::Candidate> Next(const search::ProposalContext& ctx) override;
  void Observe(const search::Observation& obs) override;
  std::string Save() const override;
  Status Load(const std::string& saved) override;
  std::string Describe() const override;
  // The fallback planner's (the agents' ideas teach it no conflict).
  std::vector<Config> LearnedConflicts() const override {
    return fallback_ ? fallback_->LearnedConflicts() : std::vector<Config>{};
  }

  // Ideas the orchestrator proposed (valid or not), and those handed to the coordinator.
  int proposed() const { return proposed_; }
  size_t handed_out() const { return handed_.size(); }
  const std::vector<IdeaRejection>& rejections() const { return rejections_; }
  const std::vector<CalibrationRow>& calibration() const { return calibration_; }
  // One line per notable event: agent errors, fallbacks, detector signals, recoveries.
  const std::vector<std::string>& notes() const { return notes_; }
  const std::set<std::string>& excluded() const { return excluded_; }
  bool agent_off() const { return agent_off_; }

  // The validation of one proposed idea (pure): nullopt and `delta_out` set when valid.
  static std::optional<IdeaRejection> Check(const IdeaProposal& idea, const target::KnobCatalog& catalog,
                                            const search::ProposalContext& ctx, const AgentProposerOptions& options,
                                            const std::set<std::string>& excluded, Config* delta_out);
  // The snapshot for a turn (exposed for tests).
  OrchestratorSnapshot Snapshot(const search::ProposalContext& ctx) const;

 private:
  struct Queued {
    search::Candidate candidate;
    bool has_claim = false;
  };
  void Turn(const search::ProposalContext& ctx);
  void Note(std::string line);
  void Recover(const std::vector<Signal>& signals);
  bool Excluded(const std::string& knob) const;

  Orchestrator& orchestrator_;
  const target::KnobCatalog& catalog_;
  AgentProposerOptions options_;
  search::Proposer* fallback_;
  Robustness* robustness_;
  SnapshotFiller fill_;
  double started_s_ = 0;

  std::vector<Queued> queue_;
  std::set<std::string> agent_ideas_;       // ids handed out from the agent
  std::map<std::string, Queued> handed_;    // idea id -> what was handed out (claims)
  std::vector<IdeaRejection> rejections_;
  std::vector<CalibrationRow> calibration_;
  std::vector<IdeaOutcome> outcomes_;
  RunHistory history_;
  std::vector<Signal> fired_;
  std::set<std::string> excluded_;          // by recoveries
  std::vector<std::string> notes_;
  int turns_ = 0;
  int proposed_ = 0;
  int failed_turns_ = 0;
  bool agent_off_ = false;
  int fallback_cycle_ = 0;                  // use the fallback for this cycle (0: none)
  int stopped_cycle_ = 0;                   // propose nothing more this cycle (0: none)
  int cycle_ = 1;
};

// A Markdown table of predicted vs measured gains, with the mean absolute error.
std::string FormatCalibrationTable(const std::vector<CalibrationRow>& rows);
// Catalog summaries for the orchestrator: every knob with why it matters / names and
// legal values only. Knobs for the other device and non-searchable ones are left out.
std::string CatalogBriefing(const target::KnobCatalog& catalog, bool gpu, bool full,
                            const std::function<bool(const std::string&)>& skip);

}  // namespace hone::agent
