// The vocabulary of the policy gate: what a component may ask for (an Action), what a
// critic says about a patch (CriticReview), and what the gate answers (PolicyDecision,
// with an ApprovalToken when allowed).
//
// These are plain value types with no behaviour beyond naming, so every layer (and the
// report, which only reads result structs) can hold them. A PolicyDecision is an
// outcome, not an error: a rejection names the rule id from data/policy/rules.yaml and
// a one-line hint, and the session records it and carries on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hone::policy {

// Everything a component can propose. The gate is the one chokepoint for all of them.
enum class ActionKind {
  kLaunchTrial,       // start a serving trial (GPUs, seconds)
  kChangeKnob,        // set a configuration knob (subject = knob, value = new value)
  kApplyPatch,        // try a source diff in a worktree (build + measure, no merge)
  kMergePatch,        // commit a measured-KEEP diff onto the accepted line
  kSignOffPatch,      // a review verdict on a diff (critics only, by default)
  kRunKernelBackend,  // run a kernel-tuning backend (subject = backend name)
  kWriteState,        // write a session state field (subject = field)
  kWriteKb,           // write the recipe knowledge base (evidence = trial id)
};
inline constexpr ActionKind kAllActionKinds[] = {
    ActionKind::kLaunchTrial,  ActionKind::kChangeKnob,       ActionKind::kApplyPatch, ActionKind::kMergePatch,
    ActionKind::kSignOffPatch, ActionKind::kRunKernelBackend, ActionKind::kWriteState, ActionKind::kWriteKb};

// "launch_trial", "change_knob", ... (the names rules.yaml uses).
std::string_view ActionKindName(ActionKind kind);
std::optional<ActionKind> ParseActionKind(std::string_view name);

// What a diff touches, summarised by the patch layer (patch::Summarize) so the gate can
// judge a patch without parsing diffs itself. The executor re-derives all of it from
// the diff text it actually applies.
struct PatchFacts {
  std::string target;              // "llama.cpp": selects the allowed-file rule
  std::string diff_sha256;         // the exact text that was reviewed / will be applied
  std::vector<std::string> files;  // repository-relative paths (after strip)
  uint64_t diff_bytes = 0;
  int lines_added = 0;
  int lines_removed = 0;
  bool binary = false;
  bool mode_change = false;  // executable bits, submodules
  bool symlink = false;      // creates or changes a symbolic link
};

struct Action {
  ActionKind kind = ActionKind::kLaunchTrial;
  std::string role;      // "coordinator", "specialist", "critic", ... (declared in rules.yaml)
  std::string actor;     // which instance asks: "specialist#3", "patch-executor"
  std::string subject;   // proposal id, knob, state field, KB table or kernel backend
  std::string value;     // the new knob/state value, for the record
  int gpus = 0;          // GPUs the action would hold
  double seconds = 0;    // wall time it may use
  std::string evidence;  // trial id backing a KB write
  PatchFacts patch;      // for kApplyPatch / kMergePatch / kSignOffPatch
};

enum class CriticVerdict { kApprove, kAdvise, kReject, kNeedsReview };
std::string_view CriticVerdictName(CriticVerdict v);
std::optional<CriticVerdict> ParseCriticVerdict(std::string_view name);

// A critic's review of one exact diff (bound by its SHA-256).
struct CriticReview {
  std::string proposal_id;
  std::string diff_sha256;
  std::string reviewer;  // actor id of the critic
  CriticVerdict verdict = CriticVerdict::kNeedsReview;
  std::string reason;  // one line
};

// Issued by the gate with an allowed decision; the patch executor verifies it again
// (Gate::Verify) before it applies or merges anything. `claims` is the signed text
// (kind, subject, diff hash, sign-off), `mac` its HMAC-SHA256 under the gate's key.
struct ApprovalToken {
  std::string claims;
  std::string mac;
  bool empty() const { return mac.empty(); }
};

struct PolicyDecision {
  int64_t seq = 0;  // 1, 2, ... in the order the gate decided
  bool allowed = false;
  ActionKind kind = ActionKind::kLaunchTrial;
  std::string role;
  std::string actor;
  std::string subject;
  std::string rule_id;  // the rule that rejected it; empty when allowed
  std::string message;  // one line: why
  std::string hint;     // one line: what to do instead
  ApprovalToken token;  // set when allowed

  // "allowed apply_patch p3 (specialist)" or "denied merge_patch p3: <message>
  // [rule patch.critic_signoff; hint: ...]".
  std::string ToString() const;
};

}  // namespace hone::policy
