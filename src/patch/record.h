// PatchRecord: what happened to one patch proposal, as plain data for the report and
// the session's event log (no behaviour, no dependencies beyond std).
//
// One record per PatchExecutor::Run: what was tried (id, origin, diff stat, files),
// how far it got (strip level, three-way fallback, build time, measurement), the
// verdict, and the rule that stopped it (a rule id from data/policy/rules.yaml, empty
// when it was kept or when the measurement alone said revert).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hone::patch {

enum class PatchVerdict {
  kKept,      // measured KEEP, signed off, committed onto the accepted line
  kReverted,  // applied in its worktree, then undone (build failure, timeout, measurement, policy)
  kRejected,  // never applied: the gate or validation said no, or it does not apply
};

inline std::string_view PatchVerdictName(PatchVerdict v) {
  switch (v) {
    case PatchVerdict::kKept:
      return "kept";
    case PatchVerdict::kReverted:
      return "reverted";
    case PatchVerdict::kRejected:
      return "rejected";
  }
  return "unknown";
}

struct PatchRecord {
  std::string proposal_id;
  std::string title;
  std::string author;  // the actor that proposed it
  std::string origin;  // "proposal" or "backport:<file name>"
  std::string diff_sha256;
  std::string diffstat;  // " 1 file changed, 1 insertion(+), 1 deletion(-)"
  int files_changed = 0;
  int lines_added = 0;
  int lines_removed = 0;
  std::vector<std::string> files;  // repository-relative, at the detected strip level

  PatchVerdict verdict = PatchVerdict::kRejected;
  std::string stopped_by;       // rule id; empty when kept or when the measurement said no
  std::string reason;           // one line
  std::string measure_verdict;  // "keep", "revert", "inconclusive", or "" when not measured

  int strip = -1;             // detected -p level; -1 when never applied
  bool three_way = false;     // applied with git apply --3way
  bool incremental = false;   // the build reused unchanged outputs (see build.h)
  double build_seconds = -1;  // -1 when not built
  double total_seconds = 0;
  std::string base_commit;      // the accepted commit it was tried on
  std::string commit;           // the new accepted commit when kept
  bool reset_verified = false;  // reverted: worktree proven identical to base_commit
  std::string build_log_tail;   // on build failure
};

}  // namespace hone::patch
