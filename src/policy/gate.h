// Gate: the one chokepoint every proposed action passes through.
//
// Components (the coordinator, LLM roles, the kernel lane, the patch executor) build an
// Action and ask Decide(); the gate checks the rules from data/policy/rules.yaml
// cheapest first (role -> request shape -> patch content -> resources -> critic
// sign-off) and returns a PolicyDecision: allowed with an ApprovalToken, or denied
// naming the rule id and a one-line hint. Critic reviews are recorded through the gate
// too (RecordReview), so "no patch is merged without a critic's sign-off" is decided
// here and, because the token's signed claims carry the sign-off, checked again by the
// patch executor with Verify() before anything is committed.
//
// The signing key is random per Gate and never leaves it: a token cannot be forged
// by a component that only sees decisions. Every decision is kept in order for the
// report (decisions()). Thread-safe: one Gate is shared by all components.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "policy/action.h"
#include "policy/rules.h"

namespace hone::policy {

class Gate {
 public:
  // A gate over `rules` with a fresh random signing key (kInternal if the system
  // random source fails).
  static Result<std::unique_ptr<Gate>> Create(Rules rules);
  // Loads rules from a file (data/policy/rules.yaml) and creates the gate.
  static Result<std::unique_ptr<Gate>> Load(const std::string& rules_path);
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  // Decides one action and records the decision.
  PolicyDecision Decide(const Action& action);

  // Records a review of one exact diff. The review is itself an action
  // (kSignOffPatch by `role`, actor = review.reviewer) and must pass the gate: it must
  // follow an allowed apply_patch of the proposal, and by the default rules only a
  // critic (or the user) may sign off, never the diff's author.
  // Only an allowed review is remembered; a later review of the same proposal replaces
  // it (so a reject after an approve withdraws the sign-off).
  PolicyDecision RecordReview(const std::string& role, const CriticReview& review);

  // Checks that `token` was issued by this gate for exactly this kind, subject and
  // diff hash, and, for kinds that need a critic's sign-off (merge_patch), that its
  // signed claims carry an accepted verdict for that diff. kPermissionDenied with
  // context rule=gate.token_invalid otherwise.
  Status Verify(const ApprovalToken& token, ActionKind kind, std::string_view subject,
                std::string_view diff_sha256) const;

  // Every decision so far, in order.
  std::vector<PolicyDecision> decisions() const;
  // Denials since the last allowed decision (a session ends a policy loop on this).
  int consecutive_denials() const;
  const Rules& rules() const { return rules_; }

 private:
  Gate(Rules rules, std::string key) : rules_(std::move(rules)), key_(std::move(key)) {}
  // The first rule `action` breaks: {rule id, message}; empty id when none.
  std::pair<std::string, std::string> Check(const Action& action) const;                  // REQUIRES mu_
  PolicyDecision Record(const Action& action, std::string rule_id, std::string message);  // REQUIRES mu_
  std::string Mac(std::string_view claims) const;

  const Rules rules_;
  const std::string key_;  // HMAC-SHA256 key, 32 random bytes
  mutable std::mutex mu_;
  std::vector<PolicyDecision> decisions_;        // GUARDED_BY(mu_)
  std::map<std::string, std::string> authors_;   // GUARDED_BY(mu_) proposal id -> actor that applied it
  std::map<std::string, CriticReview> reviews_;  // GUARDED_BY(mu_) proposal id -> standing review
  int consecutive_denials_ = 0;                  // GUARDED_BY(mu_)
};

}  // namespace hone::policy
