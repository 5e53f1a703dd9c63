// Critic: a fresh reviewer for every keep/revert and patch decision.
//
// The coordinator (or the patch flow) hands over a Decision: what is being decided and
// the measured evidence behind it (paired values, gain and confidence interval, the
// threshold and noise floor, the accuracy gate, trial ids; for a patch, the exact diff
// and its SHA-256). Review() builds a brand-new conversation for that one decision (no
// memory of earlier reviews) and returns a CriticVerdict: approve or refuse, a
// one-line reason, one learning for the knowledge base, and a signature, an
// HMAC-SHA256 under this critic's random key over the decision's evidence digest and
// the verdict, so a verdict cannot be replayed onto other evidence or edited
// (Verify()). Each review gets its own reviewer id ("critic#3").
//
// Integrity: a critic can only make an outcome more conservative: a refusal is one of
// the vetoes session/comparison.h's Decide() weighs (it turns a measured KEEP into
// REVERT), and an approval never turns anything into a KEEP. Numbers the critic writes are text, never results. A Decision with incomplete
// evidence (a KEEP without pairs, a patch whose diff does not match its hash) is
// refused without asking the model. ToReview() gives the policy gate's CriticReview for
// patch decisions (Gate::RecordReview). Not thread-safe; the client must outlive it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/client.h"
#include "core/verdict.h"
#include "agent/settings.h"
#include "policy/action.h"

namespace hone::agent {

struct Decision {
  std::string kind = "keep_revert";  // keep_revert | patch
  std::string subject;               // candidate id ("c004") or proposal id ("p3")
  std::string idea;
  std::string incumbent;             // Config::ToString of the A arm
  std::string config;                // Config::ToString of the B arm
  Verdict measured_verdict = Verdict::kPending;  // what the paired comparison said
  double gain = 0;                   // fraction, measured (direction-adjusted)
  double ci_lo = 0, ci_hi = 0;       // ratio CI
  double threshold = 0;
  double noise_floor = 0;
  int pairs = 0;
  std::vector<double> incumbent_values, candidate_values;
  std::vector<std::string> trials;
  bool accuracy_passed = true;
  std::string accuracy;              // gate detail ("" = not run)
  double claimed_gain = 0;           // the proposer's claim (shown as a claim)
  // Patch decisions.
  std::string diff;
  std::string diff_sha256;
  std::string author;                // the actor that wrote the diff

  // SHA-256 over a canonical rendering of every field above.
  std::string Digest() const;
  // The evidence as the critic sees it.
  std::string Render() const;
};

struct CriticVerdict {
  bool approve = false;
  std::string reason;
  std::string learning;
  std::vector<std::string> risks;
  std::string reviewer;         // "critic#3"
  std::string decision_digest;  // Decision::Digest() of what was reviewed
  bool deterministic = false;   // refused by the evidence check, no model asked
  std::string signature;        // hex HMAC-SHA256
};

class Critic {
 public:
  // A critic with a fresh random signing key (kInternal if the random source fails).
  static Result<std::unique_ptr<Critic>> Create(LlmClient& client, const AgentData& data);
  Critic(const Critic&) = delete;
  Critic& operator=(const Critic&) = delete;

  // Reviews one decision in a fresh conversation. Errors are the client's (no
  // backend, cap, invalid replies): the caller treats "no verdict" as no sign-off.
  Result<CriticVerdict> Review(const Decision& decision);
  // Whether `verdict` was signed by this critic for exactly `decision`.
  bool Verify(const CriticVerdict& verdict, const Decision& decision) const;
  int reviews() const { return reviews_; }

 private:
  Critic(LlmClient& client, const AgentData& data, std::string key) : client_(client), data_(data), key_(std::move(key)) {}
  std::string Sign(const CriticVerdict& v) const;
  CriticVerdict Finish(CriticVerdict v, const Decision& d) const;

  LlmClient& client_;
  const AgentData& data_;
  const std::string key_;
  int reviews_ = 0;
};

// What is wrong with a decision's evidence ("" when complete).
std::string EvidenceProblem(const Decision& d);
// The policy gate's record of a patch review.
policy::CriticReview ToReview(const CriticVerdict& verdict, const Decision& decision);

}  // namespace hone::agent
