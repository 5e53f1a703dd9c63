// KbRules: the recipe knowledge base's policy, loaded from data files (never code):
// the fallback order and confidences for matching (data/kb/fallback.yaml) and the
// admission and reproduction thresholds (data/kb/admission.yaml).
//
// FallbackPolicy is an ordered list of steps; each relaxes some identity fields (the
// anchor's order relaxes one field per step) at a confidence strictly lower than the
// step before. Fields listed as never_relaxed may not appear in any step (checked at
// load). The operating-point factors scale a step's confidence when the recorded
// workload differs from the query's. Loaders reject malformed files with
// file:line:col errors. Plain values; copy freely.
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "kb/recipe.h"

namespace hone::kb {

// A constraint a relaxed field's values must still satisfy.
enum class RelaxConstraint {
  kSameMajor,       // versions: same major number
  kSameMajorMinor,  // versions: same major.minor
  kNotNewer,        // versions: the recipe's version is not newer than the query's
};
std::string_view RelaxConstraintName(RelaxConstraint c);  // "same_major", "same_major_minor", "not_newer"

struct FallbackStep {
  std::string name;
  std::vector<MatchField> relax;  // empty for the exact step
  std::vector<RelaxConstraint> constraints;
  double confidence = 0;
  std::string why;  // shown by `hone kb match`

  bool Relaxes(MatchField f) const;
};

// Confidence factors applied when the query's operating point differs from the
// recipe's (only when the query names a workload).
struct OperatingPointFactors {
  double other_kind = 0.5;   // e.g. a closed-loop recipe for a trace workload
  double other_trace = 0.85;
  double per_concurrency_doubling = 0.95;
  double per_isl_doubling = 0.97;
  double per_osl_doubling = 0.97;
};

struct FallbackPolicy {
  std::vector<FallbackStep> steps;        // in order; steps[0] relaxes nothing
  std::vector<MatchField> never_relaxed;  // documented, and checked against the steps
  double replay_min_confidence = 0.7;     // warm replay fires at or above this
  double priors_min_confidence = 0.5;     // learnings/failures are offered at or above this
  OperatingPointFactors operating_point;
};

struct AdmissionRules {
  int64_t min_objective_trials = 1;
  int64_t min_baseline_trials = 1;
  double min_gain_fraction = 0.01;           // must beat the baseline by this much (relative)
  bool require_ci_clear_of_baseline = true;  // the objective's CI must exclude the baseline
  double reproduce_min_fraction = 0.8;       // a replay reproduces if >= this share of the recorded gain
  // An INCONCLUSIVE replay (the pairs could not decide) is no evidence against a recipe:
  // it stays active until this many replays in a row at its own point were inconclusive.
  int64_t inconclusive_replays_to_demote = 2;
};

struct KbRules {
  FallbackPolicy fallback;
  AdmissionRules admission;
};

Result<FallbackPolicy> LoadFallbackPolicy(const std::string& path);
Result<AdmissionRules> LoadAdmissionRules(const std::string& path);
// Both files from <data_dir>/data/kb/.
Result<KbRules> LoadKbRules(const std::string& data_dir);

}  // namespace hone::kb
