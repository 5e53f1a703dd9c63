#include "policy/gate.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstdio>

#include "core/strings.h"

namespace hone::policy {
namespace {

bool IsPatchKind(ActionKind k) {
  return k == ActionKind::kApplyPatch || k == ActionKind::kMergePatch || k == ActionKind::kSignOffPatch;
}

bool HasControl(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

bool IsSha256Hex(std::string_view s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string Hex(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

std::string FormatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// key=value lines of a token's claims.
std::map<std::string, std::string> ParseClaims(std::string_view claims) {
  std::map<std::string, std::string> out;
  for (const std::string& line : Split(claims, '\n')) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<Gate>> Gate::Create(Rules rules) {
  std::string key(32, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) != 1) {
    return Internal("policy gate: the system random source failed; cannot make a signing key");
  }
  return std::unique_ptr<Gate>(new Gate(std::move(rules), std::move(key)));
}

Result<std::unique_ptr<Gate>> Gate::Load(const std::string& rules_path) {
  HONE_ASSIGN_OR_RETURN(Rules rules, Rules::Load(rules_path));
  return Create(std::move(rules));
}

std::string Gate::Mac(std::string_view claims) const {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()), reinterpret_cast<const unsigned char*>(claims.data()),
       claims.size(), md, &len);
  return Hex(md, len);
}

std::pair<std::string, std::string> Gate::Check(const Action& a) const {
  const std::string kind(ActionKindName(a.kind));
  // 1. Role.
  if (!rules_.HasRole(a.role)) {
    return {kRuleRoleUnknown, "role '" + a.role + "' is not declared in the policy rules"};
  }
  auto allowed = rules_.role_allow.find(a.role);
  if (allowed == rules_.role_allow.end() || !allowed->second.contains(a.kind)) {
    return {rules_.role_actions.id, "role '" + a.role + "' may not ask for " + kind};
  }
  // 2. Request shape.
  if (a.subject.empty()) return {kRuleActionMalformed, kind + " needs a subject"};
  if (HasControl(a.subject) || HasControl(a.actor) || HasControl(a.role) || HasControl(a.value)) {
    return {kRuleActionMalformed, kind + " has a control character in its subject, actor or value"};
  }
  if (a.gpus < 0 || a.seconds < 0) return {kRuleActionMalformed, kind + " asks for a negative amount of GPUs or time"};
  if (IsPatchKind(a.kind) && !IsSha256Hex(a.patch.diff_sha256)) {
    return {kRuleActionMalformed, kind + " " + a.subject + " does not name its diff (a SHA-256 hex digest)"};
  }
  switch (a.kind) {
    case ActionKind::kChangeKnob:
      if (rules_.protected_knobs) {
        const auto& names = rules_.protected_knobs->names;
        if (std::find(names.begin(), names.end(), a.subject) != names.end()) {
          return {rules_.protected_knobs->info.id, "knob '" + a.subject + "' is part of the workload contract"};
        }
      }
      break;
    case ActionKind::kWriteState: {
      // Allowed when some rule naming the field lists the role; otherwise the first
      // rule naming the field rejects it (or state_default when none names it).
      const Rules::StateWriters* first_match = nullptr;
      bool permitted = false;
      for (const Rules::StateWriters& w : rules_.state_writers) {
        bool field_matches = std::any_of(w.fields.begin(), w.fields.end(),
                                         [&](const std::string& g) { return GlobMatch(g, a.subject); });
        if (!field_matches) continue;
        if (!first_match) first_match = &w;
        permitted = permitted || std::find(w.roles.begin(), w.roles.end(), a.role) != w.roles.end();
      }
      if (!permitted && first_match) {
        return {first_match->info.id, "role '" + a.role + "' may not write state field '" + a.subject + "'"};
      }
      if (!first_match) return {rules_.state_default.id, "no rule names state field '" + a.subject + "'"};
      break;
    }
    case ActionKind::kRunKernelBackend:
      if (rules_.kernel_backends) {
        const auto& names = rules_.kernel_backends->names;
        if (std::find(names.begin(), names.end(), a.subject) == names.end()) {
          return {rules_.kernel_backends->info.id, "kernel backend '" + a.subject + "' is not registered"};
        }
      }
      break;
    default:
      break;
  }
  for (const Rules::ActionSet& r : rules_.requires_evidence) {
    if (r.actions.contains(a.kind) && a.evidence.empty()) {
      return {r.info.id, kind + " " + a.subject + " carries no trial id as evidence"};
    }
  }
  // 3. Patch content (the executor re-derives and re-checks all of it from the diff).
  if (a.kind == ActionKind::kApplyPatch || a.kind == ActionKind::kMergePatch) {
    const PatchFacts& p = a.patch;
    if (p.files.empty()) return {kRuleNotADiff, "patch " + a.subject + " touches no files"};
    for (const std::string& f : p.files) {
      if (auto problem = CheckRepoPath(f)) return {problem->rule_id, problem->message};
    }
    if (p.symlink) return {kRuleSymlink, "patch " + a.subject + " creates or changes a symbolic link"};
    if (p.binary && !rules_.patch_binary.allow)
      return {rules_.patch_binary.info.id, "patch " + a.subject + " has binary content"};
    if (p.mode_change && !rules_.patch_mode.allow) {
      return {rules_.patch_mode.info.id, "patch " + a.subject + " changes a file mode or adds a submodule"};
    }
    const Rules::PatchSize& size = rules_.patch_size;
    if (p.diff_bytes > size.max_bytes) {
      return {size.info.id,
              "patch " + a.subject + " is " + HumanBytes(p.diff_bytes) + " (limit " + HumanBytes(size.max_bytes) + ")"};
    }
    if (static_cast<int64_t>(p.files.size()) > size.max_files) {
      return {size.info.id, "patch " + a.subject + " touches " + std::to_string(p.files.size()) + " files (limit " +
                                std::to_string(size.max_files) + ")"};
    }
    if (p.lines_added + p.lines_removed > size.max_changed_lines) {
      return {size.info.id, "patch " + a.subject + " changes " + std::to_string(p.lines_added + p.lines_removed) +
                                " lines (limit " + std::to_string(size.max_changed_lines) + ")"};
    }
    for (const std::string& f : p.files) {
      if (auto problem = rules_.CheckPatchFile(p.target, f)) return {problem->rule_id, problem->message};
    }
  }
  // 4. Resources.
  for (const Rules::Limit& l : rules_.max_gpus) {
    if (l.actions.contains(a.kind) && a.gpus > l.max) {
      return {l.info.id, kind + " " + a.subject + " asks for " + std::to_string(a.gpus) + " GPUs (limit " +
                             FormatNumber(l.max) + ")"};
    }
  }
  for (const Rules::Limit& l : rules_.max_seconds) {
    if (l.actions.contains(a.kind) && a.seconds > l.max) {
      return {l.info.id, kind + " " + a.subject + " asks for " + FormatNumber(a.seconds) + " s (limit " +
                             FormatNumber(l.max) + " s)"};
    }
  }
  // 5. Reviews and sign-off. A review follows a proposal the gate let through.
  if (a.kind == ActionKind::kSignOffPatch && !authors_.contains(a.subject)) {
    return {kRuleActionMalformed,
            "no apply_patch was allowed for proposal " + a.subject + ", so there is nothing to review"};
  }
  if (a.kind == ActionKind::kSignOffPatch && rules_.no_self_review) {
    auto author = authors_.find(a.subject);
    if (author != authors_.end() && author->second == a.actor) {
      return {rules_.no_self_review->id, a.actor + " wrote proposal " + a.subject + " and may not review it"};
    }
  }
  if (rules_.signoff.actions.contains(a.kind)) {
    auto review = reviews_.find(a.subject);
    if (review == reviews_.end()) return {rules_.signoff.info.id, "no critic has signed off proposal " + a.subject};
    if (review->second.diff_sha256 != a.patch.diff_sha256) {
      return {rules_.signoff.info.id, "the critic reviewed a different diff of proposal " + a.subject + " (" +
                                          review->second.diff_sha256.substr(0, 12) + ", not " +
                                          a.patch.diff_sha256.substr(0, 12) + ")"};
    }
    if (!rules_.signoff.verdicts.contains(review->second.verdict)) {
      return {rules_.signoff.info.id, "critic " + review->second.reviewer + " said " +
                                          std::string(CriticVerdictName(review->second.verdict)) + " to proposal " +
                                          a.subject};
    }
  }
  return {"", ""};
}

PolicyDecision Gate::Record(const Action& a, std::string rule_id, std::string message) {
  PolicyDecision d;
  d.seq = static_cast<int64_t>(decisions_.size()) + 1;
  d.kind = a.kind;
  d.role = a.role;
  d.actor = a.actor;
  d.subject = a.subject;
  d.allowed = rule_id.empty();
  if (d.allowed) {
    consecutive_denials_ = 0;
    std::string signoff = "-";
    if (rules_.signoff.actions.contains(a.kind)) {
      const CriticReview& r = reviews_.at(a.subject);  // Check() proved it exists
      signoff = r.reviewer + ":" + std::string(CriticVerdictName(r.verdict));
    }
    d.token.claims = "hone-approval v1\nseq=" + std::to_string(d.seq) +
                     "\nkind=" + std::string(ActionKindName(a.kind)) + "\nsubject=" + a.subject +
                     "\ndiff=" + (a.patch.diff_sha256.empty() ? "-" : a.patch.diff_sha256) + "\nsignoff=" + signoff;
    d.token.mac = Mac(d.token.claims);
    if (a.kind == ActionKind::kApplyPatch && !authors_.contains(a.subject)) authors_[a.subject] = a.actor;
  } else {
    ++consecutive_denials_;
    d.rule_id = std::move(rule_id);
    d.message = std::move(message);
    const RuleInfo* rule = rules_.Find(d.rule_id);
    d.hint = rule ? rule->hint : "";
  }
  decisions_.push_back(d);
  return d;
}

PolicyDecision Gate::Decide(const Action& action) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [rule, message] = Check(action);
  return Record(action, std::move(rule), std::move(message));
}

PolicyDecision Gate::RecordReview(const std::string& role, const CriticReview& review) {
  Action a;
  a.kind = ActionKind::kSignOffPatch;
  a.role = role;
  a.actor = review.reviewer;
  a.subject = review.proposal_id;
  a.value = std::string(CriticVerdictName(review.verdict));
  a.patch.diff_sha256 = review.diff_sha256;
  std::lock_guard<std::mutex> lock(mu_);
  auto [rule, message] = Check(a);
  if (rule.empty() && review.reviewer.empty()) {
    rule = kRuleActionMalformed;
    message = "a review must name its reviewer";
  }
  PolicyDecision d = Record(a, std::move(rule), std::move(message));
  if (d.allowed) reviews_[review.proposal_id] = review;
  return d;
}

Status Gate::Verify(const ApprovalToken& token, ActionKind kind, std::string_view subject,
                    std::string_view diff_sha256) const {
  auto deny = [&](const std::string& why) -> Status {
    Error e{ErrorCode::kPermissionDenied,
            "approval for " + std::string(ActionKindName(kind)) + " " + std::string(subject) + " rejected: " + why,
            {}};
    e.With("rule", kRuleTokenInvalid).With("hint", rules_.Invariant(kRuleTokenInvalid).hint);
    return Fail(std::move(e));
  };
  if (token.empty()) return deny("no token (the gate did not allow it)");
  std::string expected = Mac(token.claims);
  if (expected.size() != token.mac.size() || CRYPTO_memcmp(expected.data(), token.mac.data(), expected.size()) != 0) {
    return deny("the signature does not match (forged or altered token)");
  }
  auto claims = ParseClaims(token.claims);
  if (claims["kind"] != ActionKindName(kind)) return deny("the token was issued for " + claims["kind"]);
  if (claims["subject"] != subject) return deny("the token was issued for proposal " + claims["subject"]);
  std::string want_diff = diff_sha256.empty() ? "-" : std::string(diff_sha256);
  if (claims["diff"] != want_diff) return deny("the token was issued for a different diff");
  if (rules_.signoff.actions.contains(kind)) {
    const std::string& s = claims["signoff"];
    size_t colon = s.rfind(':');
    auto verdict = colon == std::string::npos ? std::nullopt : ParseCriticVerdict(s.substr(colon + 1));
    if (!verdict || !rules_.signoff.verdicts.contains(*verdict)) return deny("the token carries no critic sign-off");
  }
  return Ok();
}

std::vector<PolicyDecision> Gate::decisions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return decisions_;
}

int Gate::consecutive_denials() const {
  std::lock_guard<std::mutex> lock(mu_);
  return consecutive_denials_;
}

}  // namespace hone::policy
