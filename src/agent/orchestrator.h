// Orchestrator: the role that proposes the next ideas (configuration deltas).
//
// Its context is rebuilt on every turn from a plain OrchestratorSnapshot of the
// session (baseline, current best, validated gain, time left, the idea list/tree,
// recent measured outcomes, the knob catalog), so the ground truth it sees is always
// the session's, never its own recollection. Between turns it keeps only a short
// working memory: its own recent proposals and the rejections they got. Every
// `refresh_every` turns (data/agent/roles.yaml) that memory is dropped and the turn
// gets the full briefing (every knob with why it matters, the whole history); other
// turns get a compact one. The phase picks the phase instruction from the same file.
//
// Replies are schema-checked (orchestrator.schema.json, with the knob names narrowed
// to the catalog's when given, so grammar-constrained servers cannot even spell an
// unknown knob). Predicted gains come back as claims. The orchestrator does not check
// knob values: AgentProposer does, against the catalog. Not thread-safe; the client
// must outlive it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "agent/client.h"
#include "agent/settings.h"
#include "core/error.h"
#include "core/verdict.h"

namespace hone::agent {

struct IdeaOutcome {
  std::string idea;     // id or title
  std::string delta;    // "knob=value ..."
  Verdict verdict = Verdict::kPending;
  double measured_gain = 0;  // fraction, measured
  double claimed_gain = 0;   // fraction, the proposer's claim
  std::string failure_kind;
};

struct OrchestratorSnapshot {
  std::string phase = "framework";
  std::string objective = "throughput (tok/s)";
  double baseline_objective = 0;
  std::string stock;                 // Config::ToString
  std::string best;
  double best_objective = 0;
  double validated_gain = 0;         // fraction; meaningful when validated
  bool validated = false;
  double time_left_s = 0;
  int cycle = 1;
  int cpus = 1;
  bool gpu = false;
  int concurrency = 1;
  std::string idea_tree;             // the idea list/tree, as text
  std::vector<IdeaOutcome> history;  // oldest first
  std::string knobs_full;            // catalog: every knob with type, values and why
  std::string knobs_compact;         // catalog: names and legal values only
  std::vector<std::string> knob_names;  // narrows the schema's knob field (optional)
};

struct IdeaProposal {
  std::string title;
  std::vector<std::pair<std::string, std::string>> delta;  // in reply order
  std::string rationale;
  double claimed_gain = 0;  // fraction; a claim, never a result
  bool has_claim = false;
};

class Orchestrator {
 public:
  Orchestrator(LlmClient& client, const AgentData& data) : client_(client), data_(data) {}

  // One turn: asks for up to `max_ideas` ideas. Errors are the client's (credentials,
  // cap, invalid replies) — the caller falls back to its deterministic planner.
  Result<std::vector<IdeaProposal>> Propose(const OrchestratorSnapshot& snapshot, int max_ideas);
  // Feeds back what happened to proposals (rejections, verdicts) as memory lines.
  void Remember(const std::string& line);

  int turns() const { return turn_; }
  bool last_turn_refreshed() const { return last_refresh_; }
  const std::vector<std::string>& memory() const { return memory_; }

  // The prompt for a turn (exposed for tests): system and user text.
  ChatRequest BuildRequest(const OrchestratorSnapshot& snapshot, int max_ideas, bool refresh) const;

 private:
  LlmClient& client_;
  const AgentData& data_;
  int turn_ = 0;
  bool last_refresh_ = false;
  std::vector<std::string> memory_;
};

// The schema with /ideas/items/delta/items/knob narrowed to `knob_names` (unchanged
// when empty).
Result<JsonSchema> NarrowKnobs(const JsonSchema& schema, const std::vector<std::string>& knob_names);

}  // namespace hone::agent
