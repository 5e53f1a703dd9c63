// Re-verification of a backend's claims against hone's own measurement.
//
// A backend's claimed speedup is never a result. VerifyClaims matches every accepted
// claim to the harness's re-measurement of the same task, case and config (the harness
// ran it in fresh processes, interleaved with the baseline) and classifies it:
//   confirmed      the paired keep rule says KEEP
//   overclaimed    KEEP, but the claim exceeds the verified speedup by more than 10%
//   not_confirmed  INCONCLUSIVE (not significant, or under the floor)
//   regressed      REVERT (significantly slower)
//   failed_checks  a correctness, graph-replay or input check failed on re-measurement
//   not_measured   the measurement has no such case, or measured another config
//   spec_changed   the task's spec differs from the one the measurement used
// Only confirmed and overclaimed claims are kept (with the verified number). Pure.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kernel/protocol.h"
#include "kernel/summary.h"

namespace hone::kernel {

enum class ClaimStatus { kConfirmed, kOverclaimed, kNotConfirmed, kRegressed, kFailedChecks, kNotMeasured, kSpecChanged };
std::string_view ClaimStatusName(ClaimStatus s);

struct ClaimCheck {
  KernelClaim claim;
  ClaimStatus status = ClaimStatus::kNotMeasured;
  double verified_speedup = 0;
  KeepDecision decision;
  std::string note;
  bool kept() const { return status == ClaimStatus::kConfirmed || status == ClaimStatus::kOverclaimed; }
};

// current_specs: task_id -> SHA-256 of the spec file now (empty map: not checked).
std::vector<ClaimCheck> VerifyClaims(const BackendResult& claims, const std::vector<TaskSummary>& measured,
                                     const std::map<std::string, std::string>& current_specs);
std::string FormatClaimChecks(const std::vector<ClaimCheck>& checks);

}  // namespace hone::kernel
