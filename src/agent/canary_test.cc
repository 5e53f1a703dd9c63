// The key canary: a fake API key is put in the real environment and every agent path
// runs with it (OpenAI-compatible and Anthropic backends, a coding-agent CLI, every
// role, a whole session through the coordinator) while the scripted servers and the
// CLI echo the key back in replies, errors and files. Afterwards no file written
// anywhere in the run directory, and no captured message, report or saved state,
// contains it.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "agent/agent_proposer.h"
#include "agent/critic.h"
#include "agent/robustness.h"
#include "agent/runtime.h"
#include "agent/specialist.h"
#include "testing/agent_endpoint.h"
#include "testing/patch_fixture.h"
#include "session/coordinator.h"
#include "testing/fake_executor.h"
#include "testing/fake_clock.h"

namespace hone::agent {
namespace {

using json = nlohmann::json;
using testing::Canned;
using testing::OpenAiJson;

constexpr char kVar[] = "HONE_CANARY_API_KEY";
constexpr char kKey[] = "canary-7f3e9a1c5b2d4e6f8a0b";  // not key-shaped: only registration can mask it

class CanaryTest : public ::testing::Test {
 protected:
  void SetUp() override { setenv(kVar, kKey, 1); }
  void TearDown() override { unsetenv(kVar); }
  std::vector<std::string> captured_;
  void Capture(const std::string& s) { captured_.push_back(s); }
};

TEST_F(CanaryTest, TheKeyIsNeverWrittenOrReported) {
  auto fx = patch::testing::Fixture::Create();
  ASSERT_OK(fx);
  std::filesystem::path run = fx->dir->path() / "run";
  ASSERT_OK(sys::EnsureDir(run));
  hone::testing::FakeClock clock;
  const std::string key = kKey;
  auto echo = [&](const std::string& what) { return what + " (you sent " + key + ")"; };
  auto on_event = [&](const std::string& l) { Capture(l); };

  // 1. OpenAI-compatible: the server echoes the key in every reply and error.
  auto ep = testing::ScriptedEndpoint::Start();
  ep->Push({500, echo("internal error"), {}, {}});
  ep->Push(OpenAiJson(testing::Ideas({{{{"speed", "fast"}}, 10.0}})));  // re-titled below
  {
    json ideas = testing::Ideas({{{{"flash_attn", "on"}}, 10.0}});
    ideas["ideas"][0]["title"] = echo("title");
    ideas["ideas"][0]["rationale"] = echo("rationale");
    ep->Push(OpenAiJson(ideas));
  }
  ep->Push(testing::OpenAiReply(echo("not json at all")));
  ep->SetDefault(OpenAiJson(testing::Ideas({})));
  BackendConfig oc{.kind = "openai", .base_url = ep->url(), .model = "m", .api_key_env = kVar};
  ASSERT_OK_AND_ASSIGN(auto rt, AgentRuntime::Create(oc, testing::Data(), (run / "agent_calls.jsonl").string(), clock,
                                                     ProcessEnv(), on_event));
  // The key did go on the wire (as the credential header), so the echo is real.
  target::KnobCatalog catalog = testing::TestCatalog(run);
  Orchestrator orchestrator(rt->client(), testing::Data());
  Robustness robustness(&rt->client(), testing::Data());
  AgentProposer proposer(orchestrator, catalog, AgentProposerOptions{.ideas_per_turn = 1}, nullptr, &robustness);
  session::FakeExecutor exec;
  exec.clock = &clock;
  exec.run_dir = run.string();
  exec.factors = {{"speed=fast", 1.2}, {"flash_attn=on", 1.1}};
  session::SessionServices svc;
  svc.executor = &exec;
  svc.proposer = &proposer;
  svc.clock = &clock;
  svc.risky = [](const Config&) { return false; };
  svc.enablement = [](const std::string&) { return std::vector<Config>{}; };
  svc.progress = [&](const std::string& l) { Capture(l); };
  spec::SessionSpec spec;
  spec.name = "canary";
  spec.target.model.path = "/m.gguf";
  spec.budget.wall_s = 3600;
  spec.budget.max_cycles = 1;
  spec.measurement.aa_pairs = 2;
  session::Coordinator coordinator(spec, svc, session::Coordinator::NewState(spec, run.string(), clock));
  ASSERT_OK_AND_ASSIGN(session::SessionState state, coordinator.Run());
  EXPECT_GE(state.candidates.size(), 1u);
  ASSERT_NE(ep->requests().size(), 0u);
  EXPECT_NE(ep->requests()[0].headers.find(std::string("Authorization: Bearer ") + kKey), std::string::npos);
  Capture(proposer.Describe());
  Capture(proposer.Save());
  Capture(FormatCalibrationTable(proposer.calibration()));
  for (const auto& r : proposer.rejections()) Capture(r.title + r.message + r.delta);

  // Critic and robustness: their replies carry the key.
  ep->Push(OpenAiJson({{"approve", true}, {"reason", echo("reason")}, {"learning", echo("learning")}}));
  ep->Push(OpenAiJson({{"action", "exclude_knobs"}, {"knobs", {"speed"}}, {"reason", echo("reason")}}));
  ASSERT_OK_AND_ASSIGN(auto critic, Critic::Create(rt->client(), testing::Data()));
  Decision d;
  d.subject = "c001";
  d.measured_verdict = Verdict::kRevert;
  ASSERT_OK_AND_ASSIGN(CriticVerdict v, critic->Review(d));
  Capture(v.reason + v.learning + v.signature);
  Capture(ToReview(v, d).reason);
  // Robustness.
  RecoveryAction a = robustness.Recover({Signal{SignalKind::kStall, "x", {}, 1}}, {});
  Capture(a.reason);
  Capture(rt->meter().Summary());

  // 2. Anthropic: a 401 whose message quotes the key.
  auto aep = testing::ScriptedEndpoint::Start();
  aep->SetDefault({401, R"({"type":"error","error":{"type":"authentication_error","message":"bad key )" + key + "\"}}",
                   {}, {}});
  BackendConfig ac{.kind = "anthropic", .base_url = aep->url(""), .model = "claude-x", .api_key_env = kVar};
  ASSERT_OK_AND_ASSIGN(auto art, AgentRuntime::Create(ac, testing::Data(), (run / "anthropic_calls.jsonl").string(),
                                                      clock, ProcessEnv(), on_event));
  ChatRequest req;
  req.messages.push_back({"user", "hi"});
  auto denied = art->client().Chat("critic", req);
  ASSERT_FALSE(denied);
  Capture(denied.error().ToString());
  Capture(art->client().disabled_reason());
  EXPECT_NE(aep->requests()[0].headers.find(std::string("x-api-key: ") + kKey), std::string::npos);

  // 3. A coding-agent CLI that prints the key, writes it into a file and into the code.
  std::string script = (fx->dir->path() / "leaky-agent").string();
  ASSERT_OK(sys::WriteFileAtomic(script, std::string("#!/bin/sh\n") +
                                             "echo \"my key is $" + kVar + "\"\n"
                                             "mkdir -p src && echo \"$" + kVar + "\" > src/leak.cpp\n"));
  chmod(script.c_str(), 0755);
  BackendConfig cc{.kind = "cli", .api_key_env = kVar, .argv = {script, "{prompt}"}};
  ASSERT_OK_AND_ASSIGN(auto crt, AgentRuntime::Create(cc, testing::Data(), (run / "cli_calls.jsonl").string(), clock,
                                                      ProcessEnv(), on_event));
  // The same CLI as a second backend of the first runtime (shared transcript and cap).
  ASSERT_OK_AND_ASSIGN(LlmClient* shared_cli, rt->AddBackend(cc, ProcessEnv()));
  ASSERT_OK_AND_ASSIGN(ChatReply shared_reply, shared_cli->Chat("specialist", req));
  Capture(shared_reply.text);
  ASSERT_OK_AND_ASSIGN(ChatReply cli_reply, crt->client().Chat("specialist", req));
  Capture(cli_reply.text);
  EXPECT_NE(cli_reply.text.find("my key is [redacted]"), std::string::npos) << cli_reply.text;
  Specialist specialist(crt->client(), testing::Data());
  SpecialistTask task;
  task.id = "p1";
  task.goal = "anything";
  task.repo = fx->live;
  task.work_dir = run / "specialists";
  auto leaked = specialist.Run(task);
  ASSERT_FALSE(leaked);  // a diff carrying the key is refused
  Capture(leaked.error().ToString());
  for (auto* r : {rt.get(), art.get(), crt.get()}) {
    for (const auto& e : r->client().events()) Capture(e);
    for (const auto& rej : r->client().rejections()) Capture(rej.detail);
  }

  // Every file under the run directory (state, events, trials, transcripts,
  // worktrees) and everything captured.
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(run)) {
    if (!entry.is_regular_file()) continue;
    ++files;
    auto text = sys::ReadFile(entry.path());
    ASSERT_TRUE(text);
    EXPECT_EQ(text->find(key), std::string::npos) << "the key leaked into " << entry.path();
  }
  EXPECT_GE(files, 5);
  EXPECT_TRUE(sys::FileExists(run / "state.json"));
  EXPECT_TRUE(sys::FileExists(run / "agent_calls.jsonl"));
  ASSERT_OK_AND_ASSIGN(std::string transcript, sys::ReadFile(run / "agent_calls.jsonl"));
  EXPECT_NE(transcript.find("[redacted]"), std::string::npos);  // the echoes were there, masked
  for (const auto& s : captured_) EXPECT_EQ(s.find(key), std::string::npos) << "the key leaked into: " << s;
  EXPECT_GT(captured_.size(), 10u);
}

}  // namespace
}  // namespace hone::agent
