// The "lying agent": the real session coordinator, a fake trial executor and an
// AgentProposer whose scripted orchestrator claims a 10x gain for a configuration
// the executor makes 40% slower (and a loss for one that is faster). The session keeps
// what it measured and nothing else; the claims change no decision (the same session
// with opposite claims makes identical decisions); a critic that approves the lie
// cannot turn it into a KEEP.
#include <gtest/gtest.h>

#include "agent/agent_proposer.h"
#include "agent/critic.h"
#include "session/comparison.h"
#include "agent/http_backends.h"
#include "testing/agent_endpoint.h"
#include "session/coordinator.h"
#include "testing/fake_executor.h"
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
using testing::Ideas;
using testing::OpenAiJson;

spec::SessionSpec Spec() {
  spec::SessionSpec s;
  s.name = "lying-agent";
  s.target.model.path = "/m.gguf";
  s.budget.wall_s = 3600;
  s.budget.max_cycles = 2;
  s.measurement.min_pairs = 3;
  s.measurement.max_pairs = 9;
  s.measurement.pair_step = 3;
  s.measurement.aa_pairs = 2;
  return s;
}

struct Outcome {
  session::SessionState state;
  std::vector<CalibrationRow> calibration;
  std::string describe;
  size_t requests = 0;
};

// One whole session whose agent claims `slow_claim_pct` for speed=slow and
// `fast_claim_pct` for flash_attn=on.
Outcome RunSession(double slow_claim_pct, double fast_claim_pct) {
  Outcome out;
  auto dir = sys::TempDir::Create("hone-lying-agent");
  EXPECT_TRUE(dir);
  target::KnobCatalog catalog = testing::TestCatalog((*dir)->path());
  auto ep = testing::ScriptedEndpoint::Start();
  ep->Push(OpenAiJson(Ideas({{{{"speed", "slow"}}, slow_claim_pct}})));
  ep->Push(OpenAiJson(Ideas({{{{"flash_attn", "on"}}, fast_claim_pct}})));
  ep->SetDefault(OpenAiJson(Ideas({})));
  Redactor redactor;
  RealTransport transport;
  hone::testing::FakeClock clock;
  UsageMeter meter({});
  HttpBackendOptions o;
  o.base_url = ep->url();
  o.model = "liar";
  OpenAiBackend backend(o, transport, redactor);
  LlmClient client(backend, meter, clock, redactor, nullptr, {testing::Data().retry, nullptr});
  Orchestrator orchestrator(client, testing::Data());
  AgentProposerOptions po;
  po.ideas_per_turn = 1;
  AgentProposer proposer(orchestrator, catalog, po);

  session::FakeExecutor exec;
  exec.clock = &clock;
  exec.run_dir = (*dir)->path().string();
  exec.factors = {{"speed=slow", 0.6}, {"flash_attn=on", 1.25}};
  session::SessionServices svc;
  svc.executor = &exec;
  svc.proposer = &proposer;
  svc.clock = &clock;
  svc.risky = [](const Config&) { return false; };
  svc.enablement = [](const std::string&) { return std::vector<Config>{}; };
  spec::SessionSpec spec = Spec();
  session::Coordinator c(spec, svc, session::Coordinator::NewState(spec, (*dir)->path().string(), clock));
  auto s = c.Run();
  EXPECT_TRUE(s) << (s ? "" : s.error().ToString());
  if (s) out.state = *s;
  out.calibration = proposer.calibration();
  out.describe = proposer.Describe();
  out.requests = ep->count();
  return out;
}

TEST(LyingAgentTest, TheSessionKeepsOnlyWhatItMeasured) {
  Outcome liar = RunSession(/*slow=*/900, /*fast=*/-50);
  const session::SessionState& s = liar.state;
  ASSERT_EQ(s.phase, session::Phase::kDone);
  ASSERT_GE(s.candidates.size(), 2u);
  const session::CandidateRecord& slow = s.candidates[0];
  EXPECT_EQ(slow.idea, "agent:speed=slow");
  EXPECT_DOUBLE_EQ(slow.predicted_gain, 9.0);  // recorded as a claim
  EXPECT_TRUE(slow.verdict == Verdict::kScreenedOut || slow.verdict == Verdict::kRevert) << slow.verdict;
  EXPECT_LT(slow.gain, -0.3);                   // what was measured
  const session::CandidateRecord& fast = s.candidates[1];
  EXPECT_EQ(fast.idea, "agent:flash_attn=on");
  EXPECT_DOUBLE_EQ(fast.predicted_gain, -0.5);
  EXPECT_EQ(fast.verdict, Verdict::kKeep);              // kept although the agent predicted a loss
  EXPECT_NEAR(fast.gain, 0.25, 0.03);
  // The best is the measured winner, validated end to end; the slow config is nowhere.
  EXPECT_EQ(s.best.ToString(), "flash_attn=on");
  EXPECT_TRUE(s.validated);
  EXPECT_NEAR(s.validated_gain, 0.25, 0.03);
  EXPECT_FALSE(s.best.Has("speed"));
  // The calibration table puts each claim next to its measurement.
  ASSERT_EQ(liar.calibration.size(), 2u);
  EXPECT_DOUBLE_EQ(liar.calibration[0].claimed_gain, 9.0);
  EXPECT_LT(liar.calibration[0].measured_gain, -0.3);
  std::string table = FormatCalibrationTable(liar.calibration);
  EXPECT_NE(table.find("| speed=slow | +900.0% |"), std::string::npos) << table;
  EXPECT_NE(table.find("| flash_attn=on | -50.0% | +2"), std::string::npos) << table;
}

TEST(LyingAgentTest, ClaimsChangeNoDecision) {
  Outcome liar = RunSession(900, -50);
  Outcome honest = RunSession(-40, 25);
  const auto& a = liar.state;
  const auto& b = honest.state;
  ASSERT_EQ(a.candidates.size(), b.candidates.size());
  for (size_t i = 0; i < a.candidates.size(); ++i) {
    EXPECT_EQ(a.candidates[i].idea, b.candidates[i].idea);
    EXPECT_EQ(a.candidates[i].verdict, b.candidates[i].verdict);
    EXPECT_EQ(a.candidates[i].gain, b.candidates[i].gain);  // bit-identical measurements
    EXPECT_EQ(a.candidates[i].candidate_trials, b.candidates[i].candidate_trials);
    EXPECT_NE(a.candidates[i].predicted_gain, b.candidates[i].predicted_gain);
  }
  EXPECT_EQ(a.best, b.best);
  EXPECT_EQ(a.trials_run, b.trials_run);
  EXPECT_EQ(a.validated_gain, b.validated_gain);
  EXPECT_EQ(a.stop_reason, b.stop_reason);
}

TEST(LyingAgentTest, AnApprovingCriticCannotKeepAMeasuredLoss) {
  Outcome liar = RunSession(900, -50);
  const session::CandidateRecord& slow = liar.state.candidates[0];
  auto ep = testing::ScriptedEndpoint::Start();
  ep->Push(OpenAiJson({{"approve", true}, {"reason", "the agent says 10x"}, {"learning", "speed=slow is 10x faster"}}));
  Redactor redactor;
  RealTransport transport;
  hone::testing::FakeClock clock;
  UsageMeter meter({});
  HttpBackendOptions o;
  o.base_url = ep->url();
  o.model = "liar";
  OpenAiBackend backend(o, transport, redactor);
  LlmClient client(backend, meter, clock, redactor, nullptr, {testing::Data().retry, nullptr});
  ASSERT_OK_AND_ASSIGN(auto critic, Critic::Create(client, testing::Data()));
  Decision d;
  d.subject = slow.id;
  d.idea = slow.idea;
  d.incumbent = slow.incumbent.ToString();
  d.config = slow.config.ToString();
  d.measured_verdict = slow.verdict;
  d.gain = slow.gain;
  d.pairs = slow.pairs;
  d.incumbent_values = slow.incumbent_values;
  d.candidate_values = slow.candidate_values;
  d.claimed_gain = slow.predicted_gain;
  ASSERT_OK_AND_ASSIGN(CriticVerdict v, critic->Review(d));
  EXPECT_TRUE(v.approve);
  EXPECT_EQ(Stands(d.measured_verdict, v), d.measured_verdict);  // still not a KEEP
  EXPECT_NE(Stands(d.measured_verdict, v), Verdict::kKeep);
}

}  // namespace
}  // namespace hone::agent
