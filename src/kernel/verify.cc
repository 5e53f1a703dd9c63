#include "kernel/verify.h"

#include <cstdio>

namespace hone::kernel {

std::string_view ClaimStatusName(ClaimStatus s) {
  switch (s) {
    case ClaimStatus::kConfirmed: return "confirmed";
    case ClaimStatus::kOverclaimed: return "overclaimed";
    case ClaimStatus::kNotConfirmed: return "not_confirmed";
    case ClaimStatus::kRegressed: return "regressed";
    case ClaimStatus::kFailedChecks: return "failed_checks";
    case ClaimStatus::kNotMeasured: return "not_measured";
    case ClaimStatus::kSpecChanged: return "spec_changed";
  }
  return "?";
}

std::vector<ClaimCheck> VerifyClaims(const BackendResult& claims, const std::vector<TaskSummary>& measured,
                                     const std::map<std::string, std::string>& current_specs) {
  constexpr double kOverclaimTolerance = 1.10;
  std::vector<ClaimCheck> out;
  for (const KernelClaim& claim : claims.accepted) {
    ClaimCheck chk;
    chk.claim = claim;
    const TaskSummary* task = nullptr;
    for (const TaskSummary& t : measured) {
      if (t.result->task_id == claim.task_id) task = &t;
    }
    const CaseSummary* cs = nullptr;
    if (task != nullptr) {
      for (const CaseSummary& c : task->cases) {
        if (c.result->case_id == claim.case_id && !c.result->held_out) cs = &c;
      }
    }
    if (cs == nullptr) {
      chk.note = "the measurement has no case " + claim.task_id + "/" + claim.case_id;
      out.push_back(std::move(chk));
      continue;
    }
    if (auto it = current_specs.find(claim.task_id);
        it != current_specs.end() && !task->result->spec_sha256.empty() && it->second != task->result->spec_sha256) {
      chk.status = ClaimStatus::kSpecChanged;
      chk.note = "spec " + claim.task_id + " changed since it was measured (sha256 " +
                 task->result->spec_sha256.substr(0, 12) + " -> " + it->second.substr(0, 12) + ")";
      out.push_back(std::move(chk));
      continue;
    }
    const CaseResult& c = *cs->result;
    if (c.config.index != claim.config.index || c.config.num_splits != claim.config.num_splits) {
      chk.note = "measured config " + c.config.name + " (splits " + std::to_string(c.config.num_splits) +
                 "), not the claimed one";
      out.push_back(std::move(chk));
      continue;
    }
    chk.decision = cs->decision;
    chk.verified_speedup = cs->decision.speedup;
    char buf[200];
    if (!cs->checks_ok) {
      chk.status = ClaimStatus::kFailedChecks;
      chk.note = cs->decision.reason;
    } else if (cs->decision.verdict == Verdict::kKeep) {
      const bool over = claim.claimed_speedup > kOverclaimTolerance * cs->decision.speedup;
      chk.status = over ? ClaimStatus::kOverclaimed : ClaimStatus::kConfirmed;
      std::snprintf(buf, sizeof buf, "claimed x%.3f, verified x%.3f%s", claim.claimed_speedup, cs->decision.speedup,
                    over ? " (kept at the verified number)" : "");
      chk.note = buf;
    } else if (cs->decision.verdict == Verdict::kRevert) {
      chk.status = ClaimStatus::kRegressed;
      chk.note = cs->decision.reason;
    } else {
      chk.status = ClaimStatus::kNotConfirmed;
      chk.note = cs->decision.reason;
    }
    out.push_back(std::move(chk));
  }
  return out;
}

std::string FormatClaimChecks(const std::vector<ClaimCheck>& checks) {
  std::string s;
  char line[400];
  int kept = 0;
  for (const ClaimCheck& c : checks) {
    kept += c.kept();
    std::snprintf(line, sizeof line, "  %-40s %-14s claimed x%-7.3f verified x%-7.3f %s\n",
                  (c.claim.task_id + "/" + c.claim.case_id).c_str(), std::string(ClaimStatusName(c.status)).c_str(),
                  c.claim.claimed_speedup, c.verified_speedup, c.note.c_str());
    s += line;
  }
  std::snprintf(line, sizeof line, "%d of %zu claim(s) kept after re-verification\n", kept, checks.size());
  return s + line;
}

}  // namespace hone::kernel
