// Admission: what may enter the recipe knowledge base, decided before any write.
//
// Only validated results enter: the caller states the verdict (KEEP), the accuracy
// gate's pass and the re-measurement at close as explicit booleans, and the recipe's
// numbers must pass the AdmissionRules thresholds (trial ids, a real gain over the
// baseline, a CI clear of the baseline). A rejection is an outcome, not an error:
// Admission{admitted = false, reason = "..."}. Pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/verdict.h"
#include "kb/recipe.h"
#include "kb/rules.h"

namespace hone::kb {

struct AdmissionRequest {
  Recipe recipe;  // id, status, reproduce_count and history are ignored
  bool verdict_keep = false;         // the paired A/B verdict was KEEP
  bool accuracy_passed = false;      // the accuracy gate passed for this config
  bool remeasured_at_close = false;  // the objective was re-measured at close
};

struct Admission {
  bool admitted = false;
  bool updated_existing = false;  // the same identity+workload+config was already stored
  bool reactivated = false;       // ... and had been demoted; a new validated result revives it
  int64_t recipe_id = 0;
  std::string reason;  // why it was rejected, or what happened ("new recipe", "updated recipe #3")
};

// The rejection reason, or an empty string when the request may be admitted.
std::string AdmissionRejection(const AdmissionRequest& req, const AdmissionRules& rules);

// Warm replay: the result of re-measuring a stored recipe in a later session against
// that session's own stock baseline.
struct ReplayOutcome {
  Identity identity;  // where it was replayed (the session's identity and workload)
  Workload workload;
  double objective_value = 0;  // the recipe's config, re-measured
  double baseline_value = 0;   // the session's own stock baseline
  bool accuracy_passed = false;
  // The replay's verdict against the session's stock: only a KEEP (statistically
  // faster) can reproduce, whatever its point estimate.
  Verdict verdict = Verdict::kKeep;
  // The session's own bar (spec kb.reproduce_fraction); the rules' when unset.
  std::optional<double> reproduce_fraction;
  std::vector<std::string> trial_ids;
  std::string session_id;
  std::string hone_version;
};

struct ReplayVerdict {
  bool reproduced = false;
  bool same_point = false;  // replayed at the recipe's own identity and workload
  bool demoted = false;     // a failure at the recipe's own point demotes it
  // INCONCLUSIVE at the recipe's own point: how many replays in a row (this one
  // included) decided nothing; the recipe is demoted when that reaches the rules' bar.
  int inconclusive_in_row = 0;
  double recorded_gain = 0;
  double measured_gain = 0;
  double required_gain = 0;  // reproduce_min_fraction * recorded_gain
  std::string reason;
};

// Decides reproduction (no write): accuracy must pass, the replay must be kept and the
// measured gain must reach rules.reproduce_min_fraction of the recorded gain. A failure
// at the recipe's own point demotes it, but an INCONCLUSIVE replay only once
// rules.inconclusive_replays_to_demote replays in a row (its history's trailing
// "inconclusive" events and this one) were inconclusive.
ReplayVerdict JudgeReplay(const Recipe& recipe, const ReplayOutcome& outcome, const AdmissionRules& rules);

}  // namespace hone::kb
