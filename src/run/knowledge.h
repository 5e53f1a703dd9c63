// The session's side of the recipe knowledge base: the identity and workload a
// session is recorded under, opening the store, the warm start (match a recipe,
// record how its replay went, in the knowledge base's own words), the search priors
// it hands the planner, and what the close admits.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kb/admission.h"
#include "kb/recipe.h"
#include "kb/store.h"
#include "run/context.h"
#include "search/planner.h"
#include "session/services.h"
#include "session/state.h"
#include "spec/session_spec.h"
#include "sys/machine.h"

namespace hone::run {

// The hardware a session's engine runs on (the spec's override, else the GPU for a GPU
// session, the CPU otherwise): names recipes, results and the report.
std::string HardwareName(const spec::SessionSpec& spec, const sys::MachineInfo& machine);

// What a session is recorded under. `model_path` is read for its architecture.
kb::Identity SessionIdentity(const spec::SessionSpec& spec, const std::string& hardware, const std::string& model_name,
                             const std::string& model_path, const std::string& engine_version,
                             const std::string& base_precision);
kb::Workload SessionWorkload(const spec::SessionSpec& spec);

// The store when the spec enables it, else null. Broken rules (data/kb/) are an error
// naming the file; a database that cannot be opened is a warning and no store, with
// the reason in `unavailable` (the close then keeps an admissible recipe beside the
// run). `rules`, when given, receives the rules loaded.
Result<std::unique_ptr<kb::RecipeStore>> OpenKnowledgeBase(const spec::SessionSpec& spec, const RunContext& ctx,
                                                           std::string* unavailable = nullptr,
                                                           std::optional<kb::KbRules>* rules = nullptr);

// The knowledge base's experience with this identity and workload, as search priors:
// learnings with their effects, failures (a failure of several knobs blames each in part;
// a launch conflict blames none: KbConflicts).
std::vector<search::Prior> KbPriors(kb::RecipeStore& store, const kb::MatchQuery& query);
// The launch conflicts matching recipes recorded (kb::FailureKind::kConflict), each once:
// the planner never proposes them (search::PlannerOptions::conflicts).
std::vector<Config> KbConflicts(kb::RecipeStore& store, const kb::MatchQuery& query);
// The critic's notes of matching recipes, one line each (at most 12), for the orchestrator.
std::vector<std::string> KbNoteLines(kb::RecipeStore& store, const kb::MatchQuery& query);

// How the knowledge base judged a replay, in the words the report shows.
std::string ReplayWords(const kb::ReplayVerdict& v);

// The warm start: the closest recipe with enough confidence, and its replay's record.
class KbWarmStart final : public session::WarmStart {
 public:
  KbWarmStart(kb::RecipeStore& store, const spec::SessionSpec& spec, kb::MatchQuery query, std::string hone_version);
  std::optional<session::WarmCandidate> Match(std::string* explanation) override;
  std::string RecordReplay(const session::WarmCandidate& c, const session::ReplayResult& r) override;

 private:
  kb::RecipeStore& store_;
  const spec::SessionSpec& spec_;
  kb::MatchQuery query_;
  std::string hone_version_;
};

// What a candidate teaches the knowledge base as a failure (nullopt: nothing).
std::optional<kb::FailureKind> FailureKindFor(const session::CandidateRecord& c);

// The admission request for a closed session's best configuration (learnings from
// single-knob KEEPs, failures from the rest); nullopt, with `why`, when there is
// nothing to record (the stock won, or the best was not re-validated).
std::optional<kb::AdmissionRequest> AdmissionFor(const session::SessionState& s, const spec::SessionSpec& spec,
                                                 const kb::MatchQuery& query, const kb::Provenance& provenance,
                                                 std::string* why);

// The stock's record for a closed session that admits no recipe (kb::kStockRecordReason:
// its stock won, or its best was not re-validated, was refused admission or runs a
// patched build): what it learned on the way (failures, launch conflicts, the critic's
// notes; no learnings, which only an admitted KEEP gives) with the stock's baseline as
// its numbers; nullopt when nothing was learned or no baseline was measured.
std::optional<kb::Recipe> StockRecordFor(const session::SessionState& s, const spec::SessionSpec& spec,
                                         const kb::MatchQuery& query, const kb::Provenance& provenance);

}  // namespace hone::run
