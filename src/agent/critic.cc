#include "agent/critic.h"

#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdio>
#include <sstream>

#include "agent/text.h"
#include "core/strings.h"
#include "sys/files.h"

namespace hone::agent {

using json = nlohmann::json;

namespace {

std::string Hex(const unsigned char* data, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[data[i] >> 4];
    out += kDigits[data[i] & 15];
  }
  return out;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string Values(const std::vector<double>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + Num(v[i]);
  return "[" + out + "]";
}

}  // namespace

std::string Decision::Digest() const {
  // Length-prefixed fields: no two different decisions render the same.
  std::ostringstream s;
  auto field = [&](const std::string& v) { s << v.size() << ':' << v << ';'; };
  const std::string verdict(VerdictName(measured_verdict));
  for (const std::string* f : {&kind, &subject, &idea, &incumbent, &config, &verdict, &accuracy, &diff, &diff_sha256,
                               &author}) {
    field(*f);
  }
  for (double d : {gain, ci_lo, ci_hi, threshold, noise_floor, claimed_gain}) field(Num(d));
  field(std::to_string(pairs));
  field(accuracy_passed ? "1" : "0");
  field(Values(incumbent_values));
  field(Values(candidate_values));
  field(Join(trials, ","));
  return sys::Sha256Hex(s.str());
}

std::string Decision::Render() const {
  std::ostringstream u;
  u << "Decision: " << (kind == "patch" ? "keep or discard a source patch" : "keep or revert a configuration change")
    << " (" << subject << ")\n";
  if (!idea.empty()) u << "Idea: " << idea << "\n";
  u << "Incumbent (A): " << (incumbent.empty() ? "(stock)" : incumbent) << "\n";
  u << "Candidate (B): " << (config.empty() ? "(stock)" : config) << "\n";
  if (measured_verdict == Verdict::kPending && pairs == 0) {
    // A patch reviewed before its build: there is no verdict, no pair and no accuracy
    // check to show (a PENDING verdict over 0 pairs read as a failed measurement).
    u << "Measured: nothing yet. The change is reviewed before it is built; hone builds and measures it only "
         "after a sign-off, and its measured verdict is reviewed again then. Noise floor of this session: "
      << Num(noise_floor * 100) << "%\n";
  } else {
    u << "Measured verdict from hone's paired protocol: " << VerdictName(measured_verdict) << "\n";
    u << "Measured evidence:\n";
    u << "- pairs: " << pairs << "; gain " << Num(gain * 100) << "% (ratio CI " << Num(ci_lo) << " .. " << Num(ci_hi)
      << "); keep threshold " << Num(threshold * 100) << "%; noise floor " << Num(noise_floor * 100) << "%\n";
    u << "- incumbent values: " << Values(incumbent_values) << "\n";
    u << "- candidate values: " << Values(candidate_values) << "\n";
    if (!trials.empty()) u << "- trials: " << Join(trials, ", ") << "\n";
    u << "- accuracy gate: " << (accuracy.empty() ? "not run (not a risky change)" : accuracy)
      << (accuracy_passed ? "" : " [FAILED]") << "\n";
  }
  u << "Claim (not evidence): the proposer predicted " << Num(claimed_gain * 100) << "%\n";
  if (kind == "patch") {
    std::string d = diff.size() > 30000 ? ClipUtf8(diff, 30000) + "\n...[diff clipped]" : SanitizeUtf8(diff);
    u << "Patch by " << author << " (sha256 " << diff_sha256 << "):\n" << d << "\n";
  }
  return u.str();
}

std::string EvidenceProblem(const Decision& d) {
  if (d.kind != "keep_revert" && d.kind != "patch") return "unknown decision kind '" + d.kind + "'";
  if (d.subject.empty()) return "no subject";
  if (d.kind == "patch") {
    if (d.diff.empty()) return "no diff";
    if (sys::Sha256Hex(d.diff) != d.diff_sha256) return "the diff does not match its sha256";
  }
  if (d.measured_verdict == Verdict::kKeep) {
    if (d.pairs <= 0) return "a KEEP without paired measurements";
    if (d.incumbent_values.size() < static_cast<size_t>(d.pairs) ||
        d.candidate_values.size() < static_cast<size_t>(d.pairs)) {
      return "fewer measured values than pairs";
    }
    if (!d.accuracy_passed) return "a KEEP that failed the accuracy gate";
  }
  return "";
}

policy::CriticReview ToReview(const CriticVerdict& verdict, const Decision& decision) {
  policy::CriticReview r;
  r.proposal_id = decision.subject;
  r.diff_sha256 = decision.diff_sha256;
  r.reviewer = verdict.reviewer;
  r.verdict = verdict.approve ? policy::CriticVerdict::kApprove : policy::CriticVerdict::kReject;
  std::string reason = verdict.reason;
  for (char& c : reason) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  r.reason = reason;
  return r;
}

Result<std::unique_ptr<Critic>> Critic::Create(LlmClient& client, const AgentData& data) {
  unsigned char key[32];
  if (RAND_bytes(key, sizeof key) != 1) return Internal("critic: the system random source failed");
  return std::unique_ptr<Critic>(new Critic(client, data, std::string(reinterpret_cast<char*>(key), sizeof key)));
}

std::string Critic::Sign(const CriticVerdict& v) const {
  std::ostringstream s;
  auto field = [&](const std::string& x) { s << x.size() << ':' << x << ';'; };
  field(v.decision_digest);
  field(v.approve ? "approve" : "refuse");
  field(v.reason);
  field(v.learning);
  field(Join(v.risks, "\n"));
  field(v.reviewer);
  field(v.deterministic ? "1" : "0");
  std::string msg = s.str();
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()), reinterpret_cast<const unsigned char*>(msg.data()),
       msg.size(), mac, &len);
  return Hex(mac, len);
}

CriticVerdict Critic::Finish(CriticVerdict v, const Decision& d) const {
  v.decision_digest = d.Digest();
  v.reason = client_.redactor().Redact(v.reason);
  v.learning = client_.redactor().Redact(v.learning);
  v.signature = Sign(v);
  return v;
}

bool Critic::Verify(const CriticVerdict& verdict, const Decision& decision) const {
  if (verdict.decision_digest != decision.Digest()) return false;
  // Constant-time comparison is not needed here: the key never leaves this object and
  // verification runs in-process.
  return !verdict.signature.empty() && Sign(verdict) == verdict.signature;
}

Result<CriticVerdict> Critic::Review(const Decision& decision) {
  ++reviews_;
  CriticVerdict v;
  v.reviewer = "critic#" + std::to_string(reviews_);
  if (std::string problem = EvidenceProblem(decision); !problem.empty()) {
    v.approve = false;
    v.deterministic = true;
    v.reason = "refused without review: " + problem;
    return Finish(std::move(v), decision);
  }
  // A fresh conversation: system instructions plus this decision, nothing else.
  ChatRequest req;
  req.system = data_.critic.system;
  req.messages.push_back({"user", decision.Render()});
  req.max_output_tokens = 600;
  req.temperature = 0;
  HONE_ASSIGN_OR_RETURN(StructuredReply reply, client_.Structured("critic", std::move(req), data_.critic_schema));
  v.approve = reply.value["approve"].get<bool>();
  v.reason = reply.value["reason"].get<std::string>();
  v.learning = reply.value["learning"].get<std::string>();
  if (reply.value.contains("risks")) {
    for (const json& r : reply.value["risks"]) v.risks.push_back(r.get<std::string>());
  }
  return Finish(std::move(v), decision);
}

}  // namespace hone::agent
