// Matching a session against stored recipes: the pure scoring half (no SQL).
//
// ScoreCandidate walks the FallbackPolicy's steps in order and returns the first
// step whose relaxations let the recipe match the query, the per-field outcome
// (matched / relaxed / not given), the operating-point factor and one explanation
// line per decision, so that `hone kb match` can say which fields matched and why.
// A query field left empty is "not given" and matches anything at no cost (for CLI
// queries; the session always gives all seven). Pure functions over values;
// thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kb/recipe.h"
#include "kb/rules.h"

namespace hone::kb {

struct MatchQuery {
  Identity identity;  // empty fields: not given
  Workload workload;  // empty kind: not compared
};

enum class FieldState { kMatched, kRelaxed, kNotGiven };
std::string_view FieldStateName(FieldState s);  // "matched", "relaxed", "not given"

struct FieldMatch {
  MatchField field = MatchField::kModel;
  FieldState state = FieldState::kMatched;
  std::string query_value;
  std::string recipe_value;
};

// How one recipe scores against a query.
struct CandidateScore {
  const FallbackStep* step = nullptr;  // the first step that admits the recipe (points into the policy)
  double step_confidence = 0;
  double operating_point_factor = 1;
  double confidence = 0;  // step_confidence * operating_point_factor
  std::vector<FieldMatch> fields;
  std::vector<std::string> explanation;
};

// nullopt when no step admits the recipe; `why_not` (optional) receives the reason
// ("differs in model and precision; no step relaxes both").
std::optional<CandidateScore> ScoreCandidate(const MatchQuery& q, const Identity& recipe_identity,
                                             const Workload& recipe_workload, const FallbackPolicy& policy,
                                             std::string* why_not = nullptr);

// The operating-point factor in [0, 1] and its explanation lines.
double OperatingPointFactor(const Workload& query, const Workload& recipe, const OperatingPointFactors& factors,
                            std::vector<std::string>* explanation);

// Leading numeric components of a version ("0.4.0-dev" -> {0, 4, 0}; "b4567" -> {4567}).
std::vector<int64_t> VersionNumbers(std::string_view version);

struct MatchResult {
  std::optional<Recipe> recipe;  // the best-scoring recipe; nullopt on a miss
  std::string step = "miss";     // the fallback step that admitted it
  double step_confidence = 0;
  double operating_point_factor = 1;
  double confidence = 0;
  bool replay = false;  // confidence >= the policy's replay_min_confidence
  std::vector<MatchField> matched;
  std::vector<MatchField> relaxed;
  std::vector<MatchField> not_given;
  std::vector<FieldMatch> fields;
  std::vector<std::string> explanation;  // human-readable, one decision per line
};

// A learning or failure offered to the search, weighted by its recipe's match.
struct PriorLearning {
  Learning learning;
  double confidence = 0;
  int64_t recipe_id = 0;
  std::string step;
};
struct PriorNote {
  Note note;
  double confidence = 0;
  int64_t recipe_id = 0;
};
struct PriorFailure {
  Failure failure;
  double confidence = 0;
  int64_t recipe_id = 0;
  std::string step;
};

}  // namespace hone::kb
