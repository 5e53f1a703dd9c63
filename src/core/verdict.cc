#include "core/verdict.h"

#include <ostream>
#include <string>

namespace hone {

std::string_view VerdictName(Verdict v) {
  // The name table: the only place these words are spelled.
  switch (v) {
    case Verdict::kPending: return "PENDING";
    case Verdict::kKeep: return "KEEP";
    case Verdict::kRevert: return "REVERT";
    case Verdict::kInconclusive: return "INCONCLUSIVE";
    case Verdict::kScreenedOut: return "SCREENED_OUT";
    case Verdict::kLaunchFailed: return "LAUNCH_FAILED";
    case Verdict::kAccuracyFailed: return "ACCURACY_FAILED";
    case Verdict::kInvalid: return "INVALID";
    case Verdict::kSkippedBudget: return "SKIPPED_BUDGET";
    case Verdict::kPatchFailed: return "PATCH_FAILED";
    case Verdict::kBuildFailed: return "BUILD_FAILED";
    case Verdict::kPatchRejected: return "PATCH_REJECTED";
    case Verdict::kNotValidated: return "NOT_VALIDATED";
  }
  return "?";
}

Result<Verdict> ParseVerdict(std::string_view name) {
  for (Verdict v : {Verdict::kPending, Verdict::kKeep, Verdict::kRevert, Verdict::kInconclusive,
                    Verdict::kScreenedOut, Verdict::kLaunchFailed, Verdict::kAccuracyFailed, Verdict::kInvalid,
                    Verdict::kSkippedBudget, Verdict::kPatchFailed, Verdict::kBuildFailed, Verdict::kPatchRejected,
                    Verdict::kNotValidated}) {
    if (VerdictName(v) == name) return v;
  }
  return InvalidArgument("unknown verdict '" + std::string(name) + "'");
}

bool IsMeasured(Verdict v) {
  switch (v) {
    case Verdict::kKeep:
    case Verdict::kRevert:
    case Verdict::kInconclusive:
    case Verdict::kScreenedOut:
      return true;
    case Verdict::kPending:
    case Verdict::kLaunchFailed:
    case Verdict::kAccuracyFailed:
    case Verdict::kInvalid:
    case Verdict::kSkippedBudget:
    case Verdict::kPatchFailed:
    case Verdict::kBuildFailed:
    case Verdict::kPatchRejected:
    case Verdict::kNotValidated:
      return false;
  }
  return false;
}

bool IsFailure(Verdict v) {
  switch (v) {
    case Verdict::kLaunchFailed:
    case Verdict::kAccuracyFailed:
    case Verdict::kInvalid:
    case Verdict::kPatchFailed:
    case Verdict::kBuildFailed:
    case Verdict::kPatchRejected:
      return true;
    case Verdict::kPending:
    case Verdict::kKeep:
    case Verdict::kRevert:
    case Verdict::kInconclusive:
    case Verdict::kScreenedOut:
    case Verdict::kSkippedBudget:
    case Verdict::kNotValidated:
      return false;
  }
  return false;
}

std::ostream& operator<<(std::ostream& os, Verdict v) { return os << VerdictName(v); }

}  // namespace hone
