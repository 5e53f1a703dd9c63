// The orchestrator, critic and robustness roles over a scripted endpoint, and the
// robustness detectors as pure functions.
#include <gtest/gtest.h>

#include "agent/critic.h"
#include "session/comparison.h"
#include "agent/http_backends.h"
#include "agent/orchestrator.h"
#include "agent/robustness.h"
#include "testing/agent_endpoint.h"
#include "policy/gate.h"
#include "testing/fake_clock.h"

namespace hone::agent {
namespace {

// What stands once the critic reviewed a measured verdict: session::Decide with the
// critic's refusal as a veto (the only place a verdict is decided).
Verdict Stands(Verdict measured, const CriticVerdict& review) {
  session::ComparisonResult r;
  r.judged = measure::VerdictResult{};
  r.judged->verdict = measured;
  std::vector<session::Veto> vetoes;
  if (!review.approve) vetoes.push_back({session::VetoKind::kCritic, review.reason});
  return session::Decide(r, vetoes).verdict;
}


using json = nlohmann::json;
using testing::OpenAiJson;

class RolesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ep_ = testing::ScriptedEndpoint::Start();
    HttpBackendOptions o;
    o.base_url = ep_->url();
    o.model = "scripted";
    backend_ = std::make_unique<OpenAiBackend>(o, transport_, redactor_);
    client_ = std::make_unique<LlmClient>(*backend_, meter_, clock_, redactor_, nullptr,
                                          ClientOptions{testing::Data().retry, nullptr});
  }
  std::string LastUserMessage(size_t i) {
    json body = json::parse(ep_->requests().at(i).body);
    return body["messages"].back()["content"];
  }
  json Body(size_t i) { return json::parse(ep_->requests().at(i).body); }

  std::unique_ptr<testing::ScriptedEndpoint> ep_;
  Redactor redactor_;
  RealTransport transport_;
  hone::testing::FakeClock clock_;
  UsageMeter meter_{UsageLimits{}};
  std::unique_ptr<OpenAiBackend> backend_;
  std::unique_ptr<LlmClient> client_;
};

OrchestratorSnapshot Snap() {
  OrchestratorSnapshot s;
  s.phase = "framework";
  s.baseline_objective = 100;
  s.best = "threads=4";
  s.best_objective = 112;
  s.validated = false;
  s.time_left_s = 1800;
  s.knobs_full = "- threads: int 1..64 (default auto) — decode threads\n";
  s.knobs_compact = "- threads: int 1..64\n";
  s.knob_names = {"threads", "batch"};
  for (int i = 0; i < 20; ++i) s.history.push_back({"i" + std::to_string(i), "threads=" + std::to_string(i), Verdict::kRevert, -0.01, 0.2, ""});
  return s;
}

TEST_F(RolesTest, OrchestratorRebuildsContextAndRefreshesPeriodically) {
  ep_->SetDefault(OpenAiJson(testing::Ideas({{{{"threads", "8"}}, 25.0}})));
  Orchestrator o(*client_, testing::Data());
  int every = testing::Data().orchestrator.refresh_every;
  ASSERT_OK_AND_ASSIGN(auto ideas, o.Propose(Snap(), 3));
  ASSERT_EQ(ideas.size(), 1u);
  EXPECT_EQ(ideas[0].delta[0], (std::pair<std::string, std::string>{"threads", "8"}));
  EXPECT_TRUE(ideas[0].has_claim);
  EXPECT_DOUBLE_EQ(ideas[0].claimed_gain, 0.25);
  EXPECT_TRUE(o.last_turn_refreshed());
  std::string first = LastUserMessage(0);
  EXPECT_NE(first.find("FULL BRIEFING"), std::string::npos);
  EXPECT_NE(first.find("decode threads"), std::string::npos);           // the full catalog
  EXPECT_NE(first.find("20 in total, last 20 shown"), std::string::npos);  // the whole history
  EXPECT_NE(first.find("current best: threads=4 = 112"), std::string::npos);
  // The phase instruction comes from data.
  std::string system = Body(0)["messages"][0]["content"];
  EXPECT_NE(system.find("Phase: framework"), std::string::npos);
  // The schema's knob field is narrowed to the catalog's names.
  json knob = Body(0)["response_format"]["json_schema"]["schema"]["properties"]["ideas"]["items"]["properties"]["delta"]
                     ["items"]["properties"]["knob"];
  EXPECT_EQ(knob["enum"], json({"threads", "batch"}));

  o.Remember("rejected 'x': agent.bad_value");
  ASSERT_OK(o.Propose(Snap(), 3));
  EXPECT_FALSE(o.last_turn_refreshed());
  std::string second = LastUserMessage(1);
  EXPECT_NE(second.find("UPDATE"), std::string::npos);
  EXPECT_EQ(second.find("decode threads"), std::string::npos);  // compact catalog
  EXPECT_NE(second.find("last " + std::to_string(testing::Data().orchestrator.history_compact) + " shown"),
            std::string::npos);
  EXPECT_NE(second.find("rejected 'x': agent.bad_value"), std::string::npos);  // working memory
  for (int i = 2; i < every; ++i) ASSERT_OK(o.Propose(Snap(), 3));
  ASSERT_OK(o.Propose(Snap(), 3));
  EXPECT_TRUE(o.last_turn_refreshed());  // every `refresh_every` turns
  EXPECT_TRUE(o.memory().empty());
  EXPECT_NE(LastUserMessage(static_cast<size_t>(every)).find("FULL BRIEFING"), std::string::npos);
}

TEST_F(RolesTest, OrchestratorUsesThePhaseInstruction) {
  ep_->SetDefault(OpenAiJson(testing::Ideas({})));
  Orchestrator o(*client_, testing::Data());
  OrchestratorSnapshot s = Snap();
  s.phase = "kernel";
  ASSERT_OK_AND_ASSIGN(auto ideas, o.Propose(s, 3));
  EXPECT_TRUE(ideas.empty());
  std::string system = Body(0)["messages"][0]["content"];
  EXPECT_NE(system.find("Phase: kernel"), std::string::npos);
}

Decision Keep() {
  Decision d;
  d.kind = "keep_revert";
  d.subject = "c004";
  d.idea = "threads=8";
  d.incumbent = "threads=4";
  d.config = "threads=8";
  d.measured_verdict = Verdict::kKeep;
  d.gain = 0.08;
  d.ci_lo = 1.05;
  d.ci_hi = 1.11;
  d.threshold = 0.02;
  d.noise_floor = 0.01;
  d.pairs = 3;
  d.incumbent_values = {100, 101, 99};
  d.candidate_values = {108, 109, 107};
  d.trials = {"t1", "t2"};
  d.claimed_gain = 9.0;
  return d;
}

TEST_F(RolesTest, CriticSignsAVerdictBoundToTheEvidence) {
  ep_->Push(OpenAiJson({{"approve", true}, {"reason", "consistent gain over 3 pairs"}, {"learning", "threads=8 helps"},
                        {"risks", {"small sample"}}}));
  ASSERT_OK_AND_ASSIGN(auto critic, Critic::Create(*client_, testing::Data()));
  Decision d = Keep();
  ASSERT_OK_AND_ASSIGN(CriticVerdict v, critic->Review(d));
  EXPECT_TRUE(v.approve);
  EXPECT_EQ(v.reviewer, "critic#1");
  EXPECT_EQ(v.learning, "threads=8 helps");
  EXPECT_EQ(v.risks, std::vector<std::string>{"small sample"});
  EXPECT_TRUE(critic->Verify(v, d));
  // The evidence was shown, and the claim was labelled as a claim.
  std::string prompt = LastUserMessage(0);
  EXPECT_NE(prompt.find("candidate values: [108, 109, 107]"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("Claim (not evidence): the proposer predicted 900%"), std::string::npos) << prompt;
  // Edited verdicts and other evidence do not verify.
  CriticVerdict edited = v;
  edited.learning = "threads=8 gives 10x";
  EXPECT_FALSE(critic->Verify(edited, d));
  Decision other = d;
  other.candidate_values[0] = 200;
  EXPECT_FALSE(critic->Verify(v, other));
  // Another critic's key does not verify it either.
  ASSERT_OK_AND_ASSIGN(auto stranger, Critic::Create(*client_, testing::Data()));
  EXPECT_FALSE(stranger->Verify(v, d));
}

TEST_F(RolesTest, EveryReviewIsAFreshConversation) {
  ep_->SetDefault(OpenAiJson({{"approve", false}, {"reason", "thin"}, {"learning", ""}}));
  ASSERT_OK_AND_ASSIGN(auto critic, Critic::Create(*client_, testing::Data()));
  Decision a = Keep();
  Decision b = Keep();
  b.subject = "c005";
  ASSERT_OK_AND_ASSIGN(CriticVerdict va, critic->Review(a));
  ASSERT_OK_AND_ASSIGN(CriticVerdict vb, critic->Review(b));
  EXPECT_EQ(vb.reviewer, "critic#2");
  json second = Body(1);
  EXPECT_EQ(second["messages"].size(), 2u);  // system + this decision only
  std::string text = second["messages"][1]["content"];
  EXPECT_EQ(text.find("c004"), std::string::npos);
  EXPECT_NE(text.find("c005"), std::string::npos);
}

TEST_F(RolesTest, CriticCanOnlyMakeOutcomesMoreConservative) {
  CriticVerdict approve{.approve = true};
  CriticVerdict refuse{.approve = false};
  EXPECT_EQ(Stands(Verdict::kKeep, approve), Verdict::kKeep);
  EXPECT_EQ(Stands(Verdict::kKeep, refuse), Verdict::kRevert);
  EXPECT_EQ(Stands(Verdict::kRevert, approve), Verdict::kRevert);  // an approval never creates a KEEP
  EXPECT_EQ(Stands(Verdict::kInconclusive, approve), Verdict::kInconclusive);
}

TEST_F(RolesTest, IncompleteEvidenceIsRefusedWithoutAskingTheModel) {
  ASSERT_OK_AND_ASSIGN(auto critic, Critic::Create(*client_, testing::Data()));
  Decision d = Keep();
  d.pairs = 0;
  ASSERT_OK_AND_ASSIGN(CriticVerdict v, critic->Review(d));
  EXPECT_FALSE(v.approve);
  EXPECT_TRUE(v.deterministic);
  EXPECT_NE(v.reason.find("a KEEP without paired measurements"), std::string::npos);
  EXPECT_TRUE(critic->Verify(v, d));
  Decision p;
  p.kind = "patch";
  p.subject = "p1";
  p.measured_verdict = Verdict::kKeep;
  p.diff = "diff --git a/x b/x\n";
  p.diff_sha256 = "0000";
  EXPECT_EQ(EvidenceProblem(p), "the diff does not match its sha256");
  EXPECT_EQ(ep_->count(), 0u);
}

TEST_F(RolesTest, APatchVerdictIsAGateReview) {
  ep_->Push(OpenAiJson({{"approve", true}, {"reason", "small, on-topic change"}, {"learning", "slots matter"}}));
  ASSERT_OK_AND_ASSIGN(auto critic, Critic::Create(*client_, testing::Data()));
  auto gate = policy::Gate::Load((hone::testing::SourceDir() / "data/policy/rules.yaml").string());
  ASSERT_OK(gate);
  std::string diff =
      "diff --git a/common/common.h b/common/common.h\n--- a/common/common.h\n+++ b/common/common.h\n"
      "@@ -1,1 +1,1 @@\n-int a = 1;\n+int a = 2;\n";
  policy::Action apply;
  apply.kind = policy::ActionKind::kApplyPatch;
  apply.role = "specialist";
  apply.actor = "specialist#1";
  apply.subject = "p1";
  apply.patch = {"llama.cpp", sys::Sha256Hex(diff), {"common/common.h"}, diff.size(), 1, 1};
  ASSERT_TRUE((*gate)->Decide(apply).allowed);
  Decision d;
  d.kind = "patch";
  d.subject = "p1";
  d.measured_verdict = Verdict::kPending;
  d.diff = diff;
  d.diff_sha256 = sys::Sha256Hex(diff);
  d.author = "specialist#1";
  ASSERT_OK_AND_ASSIGN(CriticVerdict v, critic->Review(d));
  policy::PolicyDecision recorded = (*gate)->RecordReview("critic", ToReview(v, d));
  EXPECT_TRUE(recorded.allowed) << recorded.ToString();
  // Reviewed before its build: the model is told nothing was measured yet, not shown a
  // PENDING verdict over 0 pairs.
  ASSERT_EQ(ep_->requests().size(), 1u);
  const std::string asked = ep_->requests()[0].body;
  EXPECT_NE(asked.find("Measured: nothing yet"), std::string::npos) << asked;
  EXPECT_EQ(asked.find("PENDING"), std::string::npos) << asked;
  EXPECT_EQ(asked.find("pairs: 0"), std::string::npos) << asked;
}

// ---- robustness detectors ----

HistoryEntry E(const std::string& delta, Verdict verdict, const std::string& failure = "",
               const std::string& hash = "") {
  HistoryEntry e;
  e.delta = delta;
  e.verdict = verdict;
  e.failure_kind = failure;
  e.config_hash = hash.empty() ? delta : hash;
  e.config = delta;
  return e;
}

TEST(DetectorsTest, StallFiresAfterEnoughVerdictsWithoutAKeep) {
  DetectorThresholds t;
  t.stall_candidates = 3;
  RunHistory h;
  h.entries = {E("a=1", Verdict::kKeep), E("b=1", Verdict::kRevert), E("c=1", Verdict::kRevert)};
  EXPECT_FALSE(DetectStall(h, t));
  h.entries.push_back(E("d=1", Verdict::kInconclusive));
  auto s = DetectStall(h, t);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->detail, "3 verdicts in a row without a KEEP");
}

TEST(DetectorsTest, StallFiresAfterTimeWithoutAKeep) {
  DetectorThresholds t;
  t.stall_seconds = 600;
  RunHistory h;
  h.entries = {E("a=1", Verdict::kKeep), E("b=1", Verdict::kRevert), E("c=1", Verdict::kRevert)};
  h.entries[0].t_s = 100;
  h.now_s = 650;
  EXPECT_FALSE(DetectStall(h, t));
  h.now_s = 800;
  EXPECT_TRUE(DetectStall(h, t));
}

TEST(DetectorsTest, CrashLoopNamesTheCrashingKnobs) {
  DetectorThresholds t;
  t.crash_streak = 3;
  RunHistory h;
  h.entries = {E("a=1", Verdict::kRevert), E("ctx=big", Verdict::kLaunchFailed, "out_of_memory"),
               E("ctx=huge batch=9", Verdict::kLaunchFailed, "out_of_memory")};
  EXPECT_FALSE(DetectCrashLoop(h, t));
  h.entries.push_back(E("ctx=max", Verdict::kLaunchFailed, "bad_flag"));
  auto s = DetectCrashLoop(h, t);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->knobs, (std::vector<std::string>{"ctx", "batch"}));
  // Or many of one kind, not in a row.
  t.crash_streak = 10;
  t.crash_same_kind = 2;
  h.entries.push_back(E("z=1", Verdict::kRevert));
  auto k = DetectCrashLoop(h, t);
  ASSERT_TRUE(k);
  EXPECT_NE(k->detail.find("of kind out_of_memory"), std::string::npos) << k->detail;
}

TEST(DetectorsTest, CirclingSeesRepeatedConfigsAndFlipFlops) {
  DetectorThresholds t;
  t.circling_repeats = 2;
  t.flip_flops = 2;
  RunHistory h;
  h.entries = {E("a=1", Verdict::kRevert, "", "h1"), E("b=1", Verdict::kRevert, "", "h2")};
  EXPECT_FALSE(DetectCircling(h, t));
  h.entries.push_back(E("a=1", Verdict::kRevert, "", "h1"));
  auto s = DetectCircling(h, t);
  ASSERT_TRUE(s);
  EXPECT_NE(s->detail.find("measured 2+ times"), std::string::npos);
  RunHistory f;
  f.entries = {E("x=1", Verdict::kKeep, "", "1"), E("x=2", Verdict::kKeep, "", "2"), E("x=1", Verdict::kKeep, "", "3"),
               E("x=2", Verdict::kKeep, "", "4")};
  auto flip = DetectCircling(f, t);
  ASSERT_TRUE(flip);
  EXPECT_EQ(flip->knobs, std::vector<std::string>{"x"});
}

TEST(DetectorsTest, ASignalCoolsDown) {
  DetectorThresholds t;
  t.stall_candidates = 2;
  t.cooldown_candidates = 3;
  RunHistory h;
  h.entries = {E("a=1", Verdict::kRevert), E("b=1", Verdict::kRevert)};
  auto first = DetectAll(h, t, {});
  ASSERT_EQ(first.size(), 1u);
  h.entries.push_back(E("c=1", Verdict::kRevert));
  EXPECT_TRUE(DetectAll(h, t, first).empty());
  h.entries.push_back(E("d=1", Verdict::kRevert));
  h.entries.push_back(E("e=1", Verdict::kRevert));
  EXPECT_EQ(DetectAll(h, t, first).size(), 1u);
}

TEST(DetectorsTest, DefaultRecoveryIsDeterministic) {
  Signal crash{SignalKind::kCrashLoop, "3 in a row", {"ctx"}, 3};
  Signal stall{SignalKind::kStall, "8 verdicts", {}, 8};
  Signal circle{SignalKind::kCircling, "again", {}, 5};
  EXPECT_EQ(DefaultRecovery({stall, crash}).kind, RecoveryKind::kExcludeKnobs);
  EXPECT_EQ(DefaultRecovery({stall, crash}).knobs, std::vector<std::string>{"ctx"});
  EXPECT_EQ(DefaultRecovery({circle}).kind, RecoveryKind::kResetIdeas);
  EXPECT_EQ(DefaultRecovery({stall}).kind, RecoveryKind::kUseFallback);
}

TEST_F(RolesTest, RobustnessAsksTheModelAndFallsBackOnNonsense) {
  ep_->Push(OpenAiJson({{"action", "stop_search"}, {"reason", "nothing left"}}));
  Robustness r(client_.get(), testing::Data());
  RunHistory h;
  h.entries = {E("a=1", Verdict::kRevert)};
  Signal stall{SignalKind::kStall, "8 verdicts", {}, 8};
  RecoveryAction a = r.Recover({stall}, h);
  EXPECT_EQ(a.kind, RecoveryKind::kStopSearch);
  EXPECT_EQ(a.source, "robustness");
  EXPECT_NE(LastUserMessage(0).find("stall: 8 verdicts"), std::string::npos);
  // An action outside the schema's list is rejected (and re-asked) until the limit,
  // then the deterministic default decides.
  ep_->SetDefault(OpenAiJson({{"action", "delete_everything"}, {"reason", "trust me"}}));
  RecoveryAction b = r.Recover({stall}, h);
  EXPECT_EQ(b.kind, RecoveryKind::kUseFallback);
  EXPECT_EQ(b.source, "default");
  EXPECT_NE(b.reason.find("robustness model unavailable"), std::string::npos);
  Robustness offline(nullptr, testing::Data());
  EXPECT_EQ(offline.Recover({stall}, h).source, "default");
}

}  // namespace
}  // namespace hone::agent
