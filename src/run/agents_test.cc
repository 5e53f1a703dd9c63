// The session's agents as `hone run` wires them (run/agents.h): BuildAgents' checks
// before a session starts, and whole sessions on the real coordinator with a fake
// trial executor whose agents talk to a scripted OpenAI-compatible endpoint on
// 127.0.0.1: a lying endpoint changes no outcome, a 401 on the third call and a spent
// cost cap stop the agents while the planner carries on; the specialist's diffs go
// through the patch lane (gate, critic, worktree, a real build of the patch fixture,
// paired measurement) or are recorded as rejections.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "agent/agent_proposer.h"
#include "core/strings.h"
#include "net/raw_server.h"
#include "run/agents.h"
#include "run/knowledge.h"
#include "run/lanes.h"
#include "run/search.h"
#include "run/session.h"
#include "search/heuristics.h"
#include "search/planner.h"
#include "session/coordinator.h"
#include "sys/files.h"
#include "sys/process.h"
#include "testing/agent_endpoint.h"
#include "testing/fake_clock.h"
#include "testing/fake_executor.h"
#include "testing/kb_recipes.h"
#include "testing/patch_fixture.h"
#include "testing/test_util.h"
#include "testing/validated_state.h"

namespace hone::run {
namespace {

namespace fs = std::filesystem;
using agent::testing::Canned;
using agent::testing::Ideas;
using agent::testing::OpenAiJson;
using agent::testing::RoleEndpoint;
using json = nlohmann::json;
namespace pt = ::hone::patch::testing;

target::KnobCatalog LlamaCatalog() {
  auto c = target::KnobCatalog::Load((::hone::testing::SourceDir() / "catalogs/llama.cpp/v0.4.yaml").string());
  EXPECT_TRUE(c) << (c ? "" : c.error().ToString());
  return c ? std::move(*c) : target::KnobCatalog{};
}

std::unique_ptr<search::Proposer> Planner(const spec::SessionSpec& spec, const target::KnobCatalog& catalog) {
  auto h = search::Heuristics::Load((::hone::testing::SourceDir() / "data/search/heuristics.yaml").string());
  EXPECT_TRUE(h) << (h ? "" : h.error().ToString());
  auto p = search::MakeProposer("planner", catalog, *h, PlannerOptionsFor(spec, "f16"), 1);
  EXPECT_TRUE(p) << (p ? "" : p.error().ToString());
  return p ? std::move(*p) : nullptr;
}

class AgentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-run-agents");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    ctx_.data_dir = ::hone::testing::SourceDir().string();
    ctx_.cache_dir = dir_->path() / "cache";
    ctx_.clock = &clock_;
    ctx_.progress = [this](const std::string& l) { progress_.push_back(l); };
    spec_.name = "agents";
    spec_.target.model.path = "/m.gguf";
    spec_.budget.wall_s = 36000;
    spec_.budget.max_cycles = 1;
    spec_.budget.max_trials = 40;
    spec_.measurement.min_pairs = 3;
    spec_.measurement.max_pairs = 3;
    spec_.measurement.aa_pairs = 2;
    spec_.search.knobs = {"threads", "batch_size", "ubatch_size", "parallel", "flash_attn", "cont_batching"};
    catalog_ = LlamaCatalog();
  }

  spec::AgentsSpec Openai(const RoleEndpoint& ep) {
    spec::AgentsSpec a;
    a.mode = "openai";
    a.endpoint = ep.url();
    a.model = "scripted";
    return a;
  }

  struct Run {
    session::SessionState state;
    std::string summary;
    std::string search;
    bool agents = false;
  };

  // One whole session: the planner, and the spec's agents when asked for.
  Run Session(const std::string& name, std::vector<std::string> kb_notes = {}) {
    Run out;
    std::string run_dir = (dir_->path() / name).string();
    EXPECT_OK(sys::EnsureDir(run_dir));
    std::unique_ptr<search::Proposer> proposer = Planner(spec_, catalog_);
    AgentsInputs in;
    in.catalog = &catalog_;
    in.kb_notes = std::move(kb_notes);
    auto agents = BuildAgents(spec_, run_dir, ctx_, in, proposer);
    EXPECT_TRUE(agents) << (agents ? "" : agents.error().ToString());
    if (!agents) return out;
    out.agents = agents->active();
    session::FakeExecutor exec;
    exec.clock = &clock_;
    exec.run_dir = run_dir;
    // A fixed landscape: every configuration has its own speed (the same in every session).
    exec.adjust = [](const measure::TrialRequest& r, double v) {
      return v * (0.6 + 0.8 * static_cast<double>(std::hash<std::string>{}(r.config.ToString()) % 1000) / 1000.0);
    };
    session::SessionServices svc;
    svc.executor = &exec;
    svc.proposer = proposer.get();
    svc.clock = &clock_;
    svc.risky = [](const Config&) { return false; };
    svc.enablement = [](const std::string&) { return std::vector<Config>{}; };
    svc.progress = ctx_.progress;
    const session::SessionState* live = nullptr;
    if (agents->critic) svc.critic = CriticHook(*agents->critic, [&live] { return live ? live->noise_floor : 0.0; });
    session::Coordinator coordinator(spec_, svc, session::Coordinator::NewState(spec_, run_dir, clock_));
    live = &coordinator.state();
    AttachState(*agents, coordinator.state());
    auto state = coordinator.Run();
    EXPECT_TRUE(state) << (state ? "" : state.error().ToString());
    if (!state) return out;
    out.state = std::move(*state);
    out.summary = AgentSummary(*agents, out.state);
    out.search = proposer->Describe();
    return out;
  }

  bool Progressed(const std::string& needle) const {
    for (const auto& l : progress_) {
      if (Contains(l, needle)) return true;
    }
    return false;
  }

  ::hone::testing::FakeClock clock_;
  std::unique_ptr<sys::TempDir> dir_;
  RunContext ctx_;
  spec::SessionSpec spec_;
  target::KnobCatalog catalog_;
  std::vector<std::string> progress_;
};

TEST_F(AgentsTest, ModeNoneAndAnUnknownModeAreDecidedBeforeTheSession) {
  std::unique_ptr<search::Proposer> planner = Planner(spec_, catalog_);
  search::Proposer* before = planner.get();
  AgentsInputs in;
  in.catalog = &catalog_;
  // none (also what `hone run --agents none` sets): no runtime, the planner untouched.
  ASSERT_OK_AND_ASSIGN(Agents none, BuildAgents(spec_, dir_->path().string(), ctx_, in, planner));
  EXPECT_FALSE(none.active());
  EXPECT_EQ(planner.get(), before);
  EXPECT_EQ(AgentSummary(none, {}), "");

  spec_.agents.mode = "gpt";
  auto bad = BuildAgents(spec_, dir_->path().string(), ctx_, in, planner);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("agents.mode: unknown mode 'gpt'"), std::string::npos) << bad.error().message;
  EXPECT_EQ(bad.error().message.find('\n'), std::string::npos);

  // required: false turns the same problem into a warning and the planner alone.
  spec_.agents.required = false;
  ASSERT_OK_AND_ASSIGN(Agents off, BuildAgents(spec_, dir_->path().string(), ctx_, in, planner));
  EXPECT_FALSE(off.active());
  EXPECT_EQ(planner.get(), before);
  EXPECT_NE(off.warning.find("unknown mode 'gpt'"), std::string::npos) << off.warning;
  EXPECT_NE(AgentSummary(off, {}).find("the planner searches alone"), std::string::npos);
}

TEST_F(AgentsTest, AMissingKeyAnUnreachableEndpointAndAMissingCliAreOneLineErrors) {
  std::unique_ptr<search::Proposer> planner = Planner(spec_, catalog_);
  AgentsInputs in;
  in.catalog = &catalog_;
  auto ep = RoleEndpoint::Start();
  spec_.agents = Openai(*ep);
  spec_.agents.api_key_env = "HONE_TEST_UNSET_AGENT_KEY";
  unsetenv("HONE_TEST_UNSET_AGENT_KEY");
  auto r = BuildAgents(spec_, dir_->path().string(), ctx_, in, planner);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("the API key variable HONE_TEST_UNSET_AGENT_KEY is not set"), std::string::npos)
      << r.error().message;

  ASSERT_OK_AND_ASSIGN(int closed, net::FreeLoopbackPort());
  spec_.agents.api_key_env = "";
  spec_.agents.endpoint = "http://127.0.0.1:" + std::to_string(closed) + "/v1";
  r = BuildAgents(spec_, dir_->path().string(), ctx_, in, planner);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("agents.endpoint " + spec_.agents.endpoint + " is unreachable"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos);

  spec_.agents = {};
  spec_.agents.mode = "cli";
  spec_.agents.command = {"hone-no-such-coding-agent", "{prompt}"};
  r = BuildAgents(spec_, dir_->path().string(), ctx_, in, planner);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("'hone-no-such-coding-agent' is not on PATH"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(ep->count(), 0u);  // nothing was asked of the endpoint
}

TEST_F(AgentsTest, TheOrchestratorRunsOverThePlannerAndTheSessionMeasuresItsIdeas) {
  auto ep = RoleEndpoint::Start();
  ep->Push("orchestrator", OpenAiJson(Ideas({{{{"threads", "1"}}, 25.0}, {{{"flash_attn", "maybe"}}, 5.0}})));
  ep->SetDefault("orchestrator", OpenAiJson(Ideas({})));
  ep->SetDefault("critic", OpenAiJson({{"approve", true}, {"reason", "the pairs support it"}, {"learning", "ok"}}));
  ep->SetDefault("robustness", OpenAiJson({{"action", "reset_ideas"}, {"reason", "stuck"}}));
  spec_.agents = Openai(*ep);
  Run run = Session("orchestrated");
  ASSERT_TRUE(run.agents);
  std::vector<std::string> agent_ideas;
  for (const auto& c : run.state.candidates) {
    if (c.idea.starts_with("agent:")) agent_ideas.push_back(c.idea);
  }
  // threads=1 was measured; flash_attn=maybe is no legal value and never became a candidate.
  EXPECT_EQ(Join(agent_ideas, " "), "agent:threads=1") << run.summary;
  EXPECT_NE(run.summary.find("ideas: 2 proposed by the orchestrator, 1 rejected before measurement, 1 measured"),
            std::string::npos)
      << run.summary;
  EXPECT_NE(run.summary.find("agent.bad_value"), std::string::npos) << run.summary;
  EXPECT_NE(run.summary.find("| threads=1 | +25.0% |"), std::string::npos) << run.summary;
  EXPECT_NE(run.summary.find("critic: "), std::string::npos);
  // After the agent ran dry, the planner proposed the rest.
  EXPECT_GT(run.state.candidates.size(), agent_ideas.size());
  // The orchestrator saw the session: its prompt carried the measured baseline.
  auto reqs = ep->requests();
  ASSERT_FALSE(reqs.empty());
  EXPECT_NE(reqs.front().body.find("baseline"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_->path() / "orchestrated/agent_calls.jsonl"));
}

// The critic's learning outlives its session: each reviewed candidate keeps it, the
// admitted recipe carries it as a note in the knowledge base (a real SQLite file), and
// the next session's orchestrator reads it among its learnings.
TEST_F(AgentsTest, TheCriticsLearningIsANoteTheNextSessionsOrchestratorReads) {
  auto ep = RoleEndpoint::Start();
  ep->SetDefault("orchestrator", OpenAiJson(Ideas({})));
  ep->SetDefault("critic", OpenAiJson({{"approve", true},
                                       {"reason", "the pairs support it"},
                                       {"learning", "on this host the slot count matters more than threads"}}));
  ep->SetDefault("robustness", OpenAiJson({{"action", "reset_ideas"}, {"reason", "stuck"}}));
  spec_.agents = Openai(*ep);
  spec_.agents.roles = {"orchestrator", "critic"};
  Run first = Session("first");
  ASSERT_TRUE(first.agents);
  const session::CandidateRecord* reviewed = nullptr;
  for (const auto& c : first.state.candidates) {
    if (!c.critic_learning.empty() && !reviewed) reviewed = &c;
  }
  ASSERT_NE(reviewed, nullptr) << "no candidate kept the critic's learning";
  EXPECT_EQ(reviewed->critic_learning, "on this host the slot count matters more than threads");

  // The close's admission: a validated best (forced here: this test is about the note).
  session::SessionState s = first.state;
  if (s.BestIsStock()) s.best = s.stock.Merged(Config{{"threads", "1"}});
  session::testing::MarkValidatedKeep(s);
  spec_.kb.path = (dir_->path() / "kb.sqlite").string();
  ASSERT_OK_AND_ASSIGN(auto store, OpenKnowledgeBase(spec_, ctx_));
  ASSERT_TRUE(store);
  kb::MatchQuery q{kb::testing::TestIdentity(), {.kind = "fixed", .concurrency = 4, .isl = 512, .osl = 128}};
  std::string why;
  auto req = AdmissionFor(s, spec_, q, {"0.1.0", "first-1", "2026-12-04T00:00:00Z"}, &why);
  ASSERT_TRUE(req) << why;
  ASSERT_FALSE(req->recipe.notes.empty());
  ASSERT_OK_AND_ASSIGN(kb::Admission a, store->Admit(*req));
  ASSERT_TRUE(a.admitted) << a.reason;

  const size_t before = ep->requests().size();
  Run second = Session("second", KbNoteLines(*store, q));
  ASSERT_TRUE(second.agents);
  bool read = false;
  const auto reqs = ep->requests();
  for (size_t i = before; i < reqs.size(); ++i) {
    read = read || (RoleEndpoint::RoleOf(reqs[i].body) == "orchestrator" &&
                    Contains(reqs[i].body, "note from a past session's critic on " + reviewed->id) &&
                    Contains(reqs[i].body, "the slot count matters more than threads"));
  }
  EXPECT_TRUE(read) << "the second session's orchestrator never saw the note";
}

// The same measurements with an endpoint that proposes the planner's own ideas, each
// claimed at 10x, and a critic that approves everything "because it tested it": the
// verdicts, gains and the best are the planner-alone session's.
TEST_F(AgentsTest, ALyingEndpointChangesNoOutcome) {
  Run alone = Session("alone");
  ASSERT_FALSE(alone.agents);
  ASSERT_GE(alone.state.candidates.size(), 3u);
  auto ep = RoleEndpoint::Start();
  for (const auto& c : alone.state.candidates) {
    std::vector<std::pair<std::string, std::string>> delta(c.delta.values().begin(), c.delta.values().end());
    ep->Push("orchestrator", OpenAiJson(Ideas({{delta, 900.0}})));
  }
  ep->SetDefault("orchestrator", OpenAiJson(Ideas({})));
  ep->SetDefault("critic", OpenAiJson({{"approve", true},
                                       {"reason", "I ran it myself: 10x faster, definitely keep"},
                                       {"learning", "always keep"}}));
  ep->SetDefault("robustness", OpenAiJson({{"action", "reset_ideas"}, {"reason", "stuck"}}));
  spec_.agents = Openai(*ep);
  Run lied = Session("lied");
  ASSERT_TRUE(lied.agents);
  ASSERT_EQ(lied.state.candidates.size(), alone.state.candidates.size()) << lied.summary;
  for (size_t i = 0; i < alone.state.candidates.size(); ++i) {
    const auto& a = alone.state.candidates[i];
    const auto& b = lied.state.candidates[i];
    SCOPED_TRACE(a.id + " " + a.delta.ToString());
    EXPECT_TRUE(b.idea.starts_with("agent:")) << b.idea;
    EXPECT_EQ(b.delta.ToString(), a.delta.ToString());
    EXPECT_EQ(b.verdict, a.verdict);
    EXPECT_DOUBLE_EQ(b.gain, a.gain);
    EXPECT_DOUBLE_EQ(b.predicted_gain, 9.0);  // the claim, recorded as a claim
  }
  EXPECT_EQ(lied.state.best.ToString(), alone.state.best.ToString());
  EXPECT_EQ(lied.state.validated, alone.state.validated);
  EXPECT_DOUBLE_EQ(lied.state.validated_gain, alone.state.validated_gain);
  EXPECT_EQ(lied.state.trials_run, alone.state.trials_run);
  EXPECT_NE(lied.summary.find("+900.0%"), std::string::npos) << lied.summary;
}

TEST_F(AgentsTest, ACriticRefusalTurnsAMeasuredKeepIntoARevertAndTheReportSaysWhy) {
  auto ep = RoleEndpoint::Start();
  ep->SetDefault("orchestrator", OpenAiJson(Ideas({})));
  ep->SetDefault("critic", OpenAiJson({{"approve", false},
                                       {"reason", "gain within what I consider noise"},
                                       {"learning", "be careful"}}));
  ep->SetDefault("robustness", OpenAiJson({{"action", "reset_ideas"}, {"reason", "stuck"}}));
  Run alone = Session("alone");
  std::vector<std::string> kept;
  for (const auto& c : alone.state.candidates) {
    if (c.verdict == Verdict::kKeep) kept.push_back(c.id);
  }
  ASSERT_FALSE(kept.empty()) << "the landscape has no KEEP for the planner";
  spec_.agents = Openai(*ep);
  spec_.agents.roles = {"critic"};
  Run reviewed = Session("reviewed");
  ASSERT_TRUE(reviewed.agents);
  // Only the critic runs: the planner proposes; the first KEEP it measured is refused.
  const auto& first = reviewed.state.candidates;
  auto it = std::find_if(first.begin(), first.end(), [&](const auto& c) { return c.id == kept.front(); });
  ASSERT_NE(it, first.end());
  EXPECT_EQ(it->verdict, Verdict::kRevert) << it->reason;
  EXPECT_TRUE(it->critic.starts_with("refused: gain within what I consider noise")) << it->critic;
  EXPECT_EQ(reviewed.state.best.ToString(), reviewed.state.stock.ToString());
  EXPECT_TRUE(it->reason.starts_with("measured KEEP")) << it->reason;
  EXPECT_NE(it->reason.find("but the critic refused: gain within what I consider noise"), std::string::npos);
  EXPECT_NE(reviewed.summary.find(kept.front() + " ("), std::string::npos) << reviewed.summary;
  EXPECT_NE(reviewed.summary.find("): measured KEEP, now REVERT; refused: gain within"), std::string::npos)
      << reviewed.summary;
  EXPECT_NE(reviewed.summary.find("refused: gain within what I consider noise"), std::string::npos)
      << reviewed.summary;
  // The critic was given the session's real noise floor.
  bool floor_seen = false;
  for (const auto& r : ep->requests()) {
    if (RoleEndpoint::RoleOf(r.body) == "critic" && !Contains(r.body, "noise floor 0%") &&
        Contains(r.body, "noise floor")) {
      floor_seen = true;
    }
  }
  EXPECT_TRUE(floor_seen);
}

TEST_F(AgentsTest, A401OnTheThirdCallStopsTheBackendAndThePlannerCarriesOn) {
  auto ep = RoleEndpoint::Start();
  ep->SetDefault("orchestrator", OpenAiJson(Ideas({{{{"threads", "1"}}, 10.0}})));
  ep->Push("orchestrator", OpenAiJson(Ideas({{{{"threads", "1"}}, 10.0}})));
  ep->SetDefault("critic", OpenAiJson({{"approve", true}, {"reason", "fine"}, {"learning", ""}}));
  ep->SetDefault("robustness", OpenAiJson({{"action", "reset_ideas"}, {"reason", "stuck"}}));
  ep->SetOverride([](int call) -> std::optional<Canned> {
    if (call == 3) return Canned{401, R"({"error":{"message":"invalid api key"}})", {}, {}};
    return std::nullopt;
  });
  spec_.agents = Openai(*ep);
  Run run = Session("unauthorized");
  ASSERT_TRUE(run.agents);
  EXPECT_EQ(run.state.phase, session::Phase::kDone);
  EXPECT_EQ(ep->count(), 3u) << Join(ep->roles(), " ");  // nothing was sent after the 401
  EXPECT_NE(run.summary.find("stopped: agent backend openai:scripted"), std::string::npos) << run.summary;
  EXPECT_NE(run.summary.find("credentials rejected"), std::string::npos) << run.summary;
  EXPECT_TRUE(Progressed("agents: agent backend openai:scripted")) << Join(progress_, "\n");
  // The planner carried on after the stop.
  int planner_ideas = 0;
  for (const auto& c : run.state.candidates) planner_ideas += c.idea.starts_with("agent:") ? 0 : 1;
  EXPECT_GT(planner_ideas, 0);
}

TEST_F(AgentsTest, TheCostCapStopsAgentUseAndThePlannerCarriesOn) {
  auto ep = RoleEndpoint::Start();
  // Every call reports 2000 + 500 tokens; at $100 per million tokens that is $0.25.
  auto big = [](const json& j) { return OpenAiJson(j, 2000, 500); };
  ep->SetDefault("orchestrator", big(Ideas({{{{"threads", "1"}}, 10.0}})));
  ep->SetDefault("critic", big({{"approve", true}, {"reason", "fine"}, {"learning", ""}}));
  ep->SetDefault("robustness", big({{"action", "reset_ideas"}, {"reason", "stuck"}}));
  spec_.agents = Openai(*ep);
  spec_.agents.max_cost_usd = 1.0;
  spec_.agents.price_input_usd_per_mtok = 100;
  spec_.agents.price_output_usd_per_mtok = 100;
  Run run = Session("capped");
  ASSERT_TRUE(run.agents);
  EXPECT_EQ(run.state.phase, session::Phase::kDone);
  EXPECT_GE(ep->count(), 1u);
  EXPECT_LE(ep->count(), 4u);  // $1.00 buys at most four $0.25 calls
  EXPECT_NE(run.summary.find("stopped: agent calls stopped: agent budget: cost cap"), std::string::npos) << run.summary;
  EXPECT_NE(run.summary.find(" of $1.00"), std::string::npos) << run.summary;
  EXPECT_TRUE(Progressed("agents: agent calls stopped: agent budget: cost cap")) << Join(progress_, "\n");
  int planner_ideas = 0;
  for (const auto& c : run.state.candidates) planner_ideas += c.idea.starts_with("agent:") ? 0 : 1;
  EXPECT_GT(planner_ideas, 0);
}

// What the fixture's patched server prints ("n_parallel=8" -> 8; 4 when unpatched).
double SlotsOf(const std::string& binary) {
  if (binary.empty()) return 4;
  auto out = sys::RunCommand({.argv = {binary}}, std::chrono::seconds(10));
  EXPECT_TRUE(out && out->status.success()) << binary;
  if (!out) return 0;
  std::string text(Trim(out->output));
  return text.starts_with("n_parallel=") ? ParseDouble(text.substr(11)).value_or(0) : 0;
}

TEST_F(AgentsTest, TheSpecialistsDiffsGoThroughThePatchLaneAndAFailureIsARecordedRejection) {
  ASSERT_OK_AND_ASSIGN(pt::Fixture fx, pt::Fixture::Create());
  const std::string head = pt::Sh(fx.live, "git rev-parse HEAD");
  auto ep = RoleEndpoint::Start();
  // The first task's diff applies (4 -> 8 slots); its summary makes a speed claim.
  ep->Push("specialist", OpenAiJson({{"diff", pt::ParallelDiff(8)}, {"summary", "eight slots, 2x faster"}}));
  // Every later reply is a diff whose context is not in the tree: git apply --check
  // rejects it on every ask.
  std::string stale = pt::ParallelDiff(16);
  stale.replace(stale.find("-  return 4;"), 12, "-  return 5;");
  ep->SetDefault("specialist", OpenAiJson({{"diff", stale}, {"summary", "sixteen slots"}}));
  ep->SetDefault("critic", OpenAiJson({{"approve", true}, {"reason", "small and on-topic"}, {"learning", "slots"}}));
  spec_.agents = Openai(*ep);
  spec_.agents.roles = {"critic", "specialist"};
  spec_.agents.specialist_tasks = {{"More default slots!", "raise DefaultParallel to 8", {"common/common.h"}},
                                   {"even more slots", "raise DefaultParallel to 16", {"common/common.h"}}};
  const std::string run_dir = (dir_->path() / "specialist").string();
  ASSERT_OK(sys::EnsureDir(run_dir));
  std::unique_ptr<search::Proposer> proposer = Planner(spec_, catalog_);
  AgentsInputs in;
  in.catalog = &catalog_;
  ASSERT_OK_AND_ASSIGN(Agents agents, BuildAgents(spec_, run_dir, ctx_, in, proposer));
  ASSERT_TRUE(agents.active());
  EXPECT_EQ(agents.warning, "");
  ASSERT_NE(agents.writer, nullptr);
  ASSERT_EQ(agents.goals.size(), 2u);
  EXPECT_EQ(agents.goals[0].id, "s1-more-default-slots");
  EXPECT_EQ(agents.goals[1].id, "s2-even-more-slots");

  // The lane as BuildPatchLane makes it, with the fixture's stand-in build (a g++ of
  // the fixture's one-file server) in place of llama.cpp's CMake build.
  session::PatchLaneOptions po;
  po.repo = fx.live.string();
  po.run_dir = run_dir;
  po.rules_path = ctx_.data_dir + "/data/policy/rules.yaml";
  po.recipe = fx.Recipe();
  po.jobs = 1;
  po.goals = agents.goals;
  po.writer = agents.writer.get();
  ASSERT_OK_AND_ASSIGN(auto lane, session::ExecutorPatchLane::Create(po));

  // Trials run the server binary they are given: its slot count is its speed.
  session::FakeExecutor exec;
  exec.clock = &clock_;
  exec.run_dir = run_dir;
  exec.noise = 0.002;
  exec.adjust = [](const measure::TrialRequest& r, double v) { return v * SlotsOf(r.server_binary) / 4; };
  session::SessionServices svc;
  svc.executor = &exec;
  svc.proposer = proposer.get();
  svc.clock = &clock_;
  svc.patches = lane.get();
  svc.risky = [](const Config&) { return false; };
  svc.enablement = [](const std::string&) { return std::vector<Config>{}; };
  const session::SessionState* live = nullptr;
  svc.critic = CriticHook(*agents.critic, [&live] { return live ? live->noise_floor : 0.0; });
  session::Coordinator coordinator(spec_, svc, session::Coordinator::NewState(spec_, run_dir, clock_));
  live = &coordinator.state();
  ASSERT_OK_AND_ASSIGN(session::SessionState state, coordinator.Run());
  EXPECT_EQ(state.phase, session::Phase::kDone);

  auto find = [&](const std::string& patch) -> const session::CandidateRecord* {
    for (const auto& c : state.candidates) {
      if (c.patch == patch) return &c;
    }
    return nullptr;
  };
  // The applying diff was signed off, built, measured twice as fast and kept.
  const session::CandidateRecord* kept = find("s1-more-default-slots");
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->verdict, Verdict::kKeep) << kept->reason;
  EXPECT_NEAR(kept->gain, 1.0, 0.05);
  EXPECT_EQ(kept->server_binary, run_dir + "/bin/llama-server-s1-more-default-slots");
  EXPECT_EQ(SlotsOf(kept->server_binary), 8);
  EXPECT_EQ(state.server_binary, kept->server_binary);
  EXPECT_TRUE(state.validated);
  // The accepted line holds it; the live tree is untouched.
  const std::string accepted = session::BranchPrefix(run_dir) + "/accepted";
  EXPECT_EQ(pt::Sh(fx.live, "git rev-parse " + accepted + "~1"), head);
  EXPECT_NE(pt::Sh(fx.live, "git show " + accepted + ":common/common.h").find("return 8;"), std::string::npos);
  EXPECT_EQ(pt::Sh(fx.live, "git rev-parse HEAD"), head);
  EXPECT_EQ(pt::Sh(fx.live, "git status --porcelain"), "");
  // The diff that does not apply is a recorded rejection: nothing built, nothing kept.
  const session::CandidateRecord* failed = find("s2-even-more-slots");
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->verdict, Verdict::kPatchRejected);
  EXPECT_NE(failed->reason.find("git apply --check failed"), std::string::npos) << failed->reason;
  EXPECT_TRUE(failed->reason.ends_with("[writer]")) << failed->reason;
  EXPECT_TRUE(failed->candidate_trials.empty());
  // One ask for the first task, every allowed ask for the second.
  EXPECT_EQ(ep->count("specialist"), 4u);
  // The critic reviewed the exact diff before anything was built.
  bool diff_reviewed = false;
  for (const auto& r : ep->requests()) {
    if (RoleEndpoint::RoleOf(r.body) == "critic" && Contains(r.body, "return 8;") &&
        Contains(r.body, "s1-more-default-slots")) {
      diff_reviewed = true;
    }
  }
  EXPECT_TRUE(diff_reviewed);
  ASSERT_EQ(lane->executor().records().size(), 1u);  // the failed one never reached the executor

  // The report's Agents section lists both with their outcomes; the claim is a claim.
  std::string summary = AgentSummary(agents, state);
  EXPECT_EQ(summary.find("not wired"), std::string::npos) << summary;
  EXPECT_NE(summary.find("specialist: 2 diffs asked for, 1 kept, 0 reverted"), std::string::npos) << summary;
  EXPECT_NE(summary.find("1 without a usable diff"), std::string::npos) << summary;
  EXPECT_NE(summary.find("- s1-more-default-slots 'More default slots!' by specialist#1: kept, measured +"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("(1 file(s), +1/-1)"), std::string::npos) << summary;
  EXPECT_NE(summary.find("its claims (not measurements): 2x faster"), std::string::npos) << summary;
  EXPECT_NE(summary.find("- s2-even-more-slots 'even more slots': no usable diff"), std::string::npos) << summary;
  EXPECT_EQ(failed->reason.find('\n'), std::string::npos) << failed->reason;
}

TEST_F(AgentsTest, BuildPatchLaneTakesTheSpecialistsGoals) {
  ASSERT_OK_AND_ASSIGN(pt::Fixture fx, pt::Fixture::Create());
  auto ep = RoleEndpoint::Start();
  spec_.agents = Openai(*ep);
  spec_.agents.roles = {"critic", "specialist"};
  spec_.agents.specialist_tasks = {{"more slots", "raise DefaultParallel", {}}};
  std::unique_ptr<search::Proposer> proposer = Planner(spec_, catalog_);
  AgentsInputs in;
  in.catalog = &catalog_;
  ASSERT_OK_AND_ASSIGN(Agents agents, BuildAgents(spec_, dir_->path().string(), ctx_, in, proposer));
  Engine engine;
  engine.provisioned.server = "/usr/bin/llama-server";  // from PATH: no configure arguments to rebuild with
  auto from_path = BuildPatchLane(spec_, engine, (dir_->path() / "a").string(), ctx_, &agents);
  ASSERT_FALSE(from_path);
  EXPECT_NE(from_path.error().message.find("the specialist's diffs need a llama.cpp built by hone"),
            std::string::npos)
      << from_path.error().message;
  engine.provisioned.cmake_args = {"-DGGML_NATIVE=OFF"};
  engine.provisioned.src_dir = fx.live;
  ASSERT_OK_AND_ASSIGN(auto lane, BuildPatchLane(spec_, engine, (dir_->path() / "b").string(), ctx_, &agents));
  ASSERT_NE(lane, nullptr);
  std::vector<session::PatchIdea> pending = lane->Pending({});
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].id, "s1-more-slots");
  // Without the agents (hone run --agents none) there is nothing to try.
  ASSERT_OK_AND_ASSIGN(auto none, BuildPatchLane(spec_, engine, (dir_->path() / "c").string(), ctx_, nullptr));
  EXPECT_EQ(none, nullptr);
}

TEST_F(AgentsTest, AResumedSessionsProposerStateFollowsTheAgentsNow) {
  json saved = {{"agent_off", false}, {"fallback", "planner-state"}, {"turns", 2}};
  EXPECT_EQ(AdaptSearchState(saved.dump(), false), "planner-state");
  EXPECT_EQ(AdaptSearchState(saved.dump(), true), saved.dump());
  EXPECT_EQ(AdaptSearchState("planner-state", true), "");
  EXPECT_EQ(AdaptSearchState("planner-state", false), "planner-state");
  EXPECT_EQ(AdaptSearchState("", true), "");
}

}  // namespace
}  // namespace hone::run
