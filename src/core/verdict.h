// Verdict: what became of a candidate (or a comparison), one type for every layer.
//
// A candidate is PENDING while it is measured; then exactly one verdict stands. The
// three measured outcomes come from a paired comparison (measure/verdict.h judges
// the pairs; session/comparison.h's Decide() is the only place a KEEP can be turned
// down): KEEP, REVERT, INCONCLUSIVE. The others say why no comparison decided it:
// a screening drop, a launch failure, an invalid run, the accuracy gate, the budget,
// or, for source patches, the patch lane. NOT_VALIDATED is the close's answer when
// the best configuration could not be re-measured.
//
// The names (VerdictName) are the text in state.json, events, reports, the knowledge
// base and agent prompts; ParseVerdict reads them back. Consumers switch over the
// enum without a default, so -Wswitch names every place a new verdict must be handled.
#pragma once

#include <iosfwd>
#include <string_view>

#include "core/error.h"

namespace hone {

enum class Verdict {
  kPending,         // being measured
  kKeep,            // paired comparison: significantly better by at least the threshold
  kRevert,          // paired comparison: a meaningful gain is implausible (or a veto)
  kInconclusive,    // paired comparison: undecided at the last planned look
  kScreenedOut,     // one screening trial far worse than the incumbent
  kLaunchFailed,    // the server did not start (classified failure kind)
  kAccuracyFailed,  // the accuracy gate failed
  kInvalid,         // a run that is not a result (timeouts, errors, a failed incumbent)
  kSkippedBudget,   // not enough budget left to measure it
  kPatchFailed,     // the patch lane failed (infrastructure)
  kBuildFailed,     // the patched tree did not build
  kPatchRejected,   // the policy gate or validation refused the diff
  kNotValidated,    // close: the best configuration could not be re-measured
};

// "KEEP", "REVERT", ... (the text every file and report uses).
std::string_view VerdictName(Verdict v);
// The inverse of VerdictName; kInvalidArgument naming the text otherwise.
Result<Verdict> ParseVerdict(std::string_view name);
// A measured gain exists: a paired comparison or a screening trial produced it
// (KEEP, REVERT, INCONCLUSIVE, SCREENED_OUT).
bool IsMeasured(Verdict v);
// The candidate could not be measured as asked: it did not launch, ran invalid,
// failed the accuracy gate, or its patch failed, did not build or was refused.
bool IsFailure(Verdict v);
// Writes VerdictName (for test failure messages and logs).
std::ostream& operator<<(std::ostream& os, Verdict v);

}  // namespace hone
