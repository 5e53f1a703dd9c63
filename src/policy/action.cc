#include "policy/action.h"

namespace hone::policy {

std::string_view ActionKindName(ActionKind kind) {
  switch (kind) {
    case ActionKind::kLaunchTrial:
      return "launch_trial";
    case ActionKind::kChangeKnob:
      return "change_knob";
    case ActionKind::kApplyPatch:
      return "apply_patch";
    case ActionKind::kMergePatch:
      return "merge_patch";
    case ActionKind::kSignOffPatch:
      return "sign_off_patch";
    case ActionKind::kRunKernelBackend:
      return "run_kernel_backend";
    case ActionKind::kWriteState:
      return "write_state";
    case ActionKind::kWriteKb:
      return "write_kb";
  }
  return "unknown";
}

std::optional<ActionKind> ParseActionKind(std::string_view name) {
  for (ActionKind k : kAllActionKinds) {
    if (ActionKindName(k) == name) return k;
  }
  return std::nullopt;
}

std::string_view CriticVerdictName(CriticVerdict v) {
  switch (v) {
    case CriticVerdict::kApprove:
      return "approve";
    case CriticVerdict::kAdvise:
      return "advise";
    case CriticVerdict::kReject:
      return "reject";
    case CriticVerdict::kNeedsReview:
      return "needs_review";
  }
  return "unknown";
}

std::optional<CriticVerdict> ParseCriticVerdict(std::string_view name) {
  for (CriticVerdict v :
       {CriticVerdict::kApprove, CriticVerdict::kAdvise, CriticVerdict::kReject, CriticVerdict::kNeedsReview}) {
    if (CriticVerdictName(v) == name) return v;
  }
  return std::nullopt;
}

std::string PolicyDecision::ToString() const {
  std::string who = role.empty() ? actor : role;
  if (allowed) return "allowed " + std::string(ActionKindName(kind)) + " " + subject + " (" + who + ")";
  std::string out = "denied " + std::string(ActionKindName(kind)) + " " + subject + " (" + who + "): " + message +
                    " [rule " + rule_id;
  if (!hint.empty()) out += "; hint: " + hint;
  return out + "]";
}

}  // namespace hone::policy
