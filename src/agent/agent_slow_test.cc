// A real LLM endpoint: the provisioned llama-server with a synthesized random-weight
// model, asked through the OpenAI-compatible backend with JSON-schema-constrained
// output (response_format json_schema, which llama-server turns into a grammar). Its
// answers are nonsense but schema-valid; the roles must parse them, and a session
// driven by them must stay safe: only catalog-valid knob deltas are ever measured,
// and only measured results are kept.
#include <gtest/gtest.h>

#include "agent/agent_proposer.h"
#include "agent/critic.h"
#include "session/comparison.h"
#include "agent/runtime.h"
#include "testing/agent_endpoint.h"
#include "model/synth.h"
#include "search/catalog_proposer.h"
#include "session/coordinator.h"
#include "testing/fake_executor.h"
#include "target/llamacpp.h"
#include "target/server.h"
#include "testing/fake_clock.h"
#include "testing/llama_env.h"

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
using namespace std::chrono_literals;

class RealLlmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HONE_REQUIRE_LLAMA();
    const target::Provisioned* prov = hone::testing::Llama();
    auto a = target::LlamaCppAdapter::Create(hone::testing::SourceDir().string(), prov->version);
    ASSERT_OK(a);
    adapter_ = std::move(*a);
    auto d = sys::TempDir::Create("hone-agent-llm");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    // The tiny preset with an 8k context: the orchestrator's full briefing of the
    // llama.cpp catalog is about 3k tokens, more than the preset's 2k.
    auto shape = model::LoadShapePreset("tiny", (hone::testing::SourceDir() / "data/synth_presets.yaml").string());
    ASSERT_OK(shape);
    shape->n_ctx = 8192;
    std::string model = (dir_->path() / "tiny-8k.gguf").string();
    ASSERT_OK(model::SynthesizeModel(
        {.shape = *shape, .seed = 42, .vocab_path = prov->VocabPath(shape->vocab), .out_path = model}));
    // The synthesized model's vocabulary has no <|im_start|> token, and this
    // llama-server build feeds the chat template's generation prompt through the
    // schema grammar before sampling: with the default ChatML template that prefill
    // fails ("Failed to initialize samplers"). A plain template without a generation
    // prompt renders every message and lets the schema grammar start clean. (Real
    // models ship their own template.)
    auto server = target::StartServer(
        *adapter_, Config{{"threads", "2"}, {"parallel", "1"}, {"ctx_size", "8192"}},  // room for the full briefing
        target::LaunchContext{.server_binary = prov->server, .model_path = model,
                              .extra_args = {"--chat-template",
                                             "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"}},
        target::ServerOptions{.log_path = (dir_->path() / "server.log").string(), .health_timeout = 120s});
    ASSERT_OK(server);
    server_ = std::move(*server);
    BackendConfig c{.kind = "openai", .base_url = server_->base_url() + "/v1", .model = "tiny", .timeout_s = 300};
    auto rt = AgentRuntime::Create(c, testing::Data(), (dir_->path() / "agent_calls.jsonl").string(), clock_,
                                   ProcessEnv(), [this](const std::string& l) { events_.push_back(l); });
    ASSERT_OK(rt);
    runtime_ = std::move(*rt);
  }

  std::unique_ptr<target::LlamaCppAdapter> adapter_;
  std::unique_ptr<sys::TempDir> dir_;
  std::unique_ptr<target::Server> server_;
  hone::testing::FakeClock clock_;
  std::unique_ptr<AgentRuntime> runtime_;
  std::vector<std::string> events_;
};

TEST_F(RealLlmTest, GrammarConstrainedRepliesAreSchemaValidVerdicts) {
  ASSERT_OK_AND_ASSIGN(auto critic, Critic::Create(runtime_->client(), testing::Data()));
  Decision d;
  d.subject = "c001";
  d.idea = "threads=1";
  d.incumbent = "threads=2";
  d.config = "threads=1";
  d.measured_verdict = Verdict::kRevert;
  d.gain = -0.2;
  ASSERT_OK_AND_ASSIGN(CriticVerdict v, critic->Review(d));
  EXPECT_TRUE(critic->Verify(v, d));
  EXPECT_FALSE(v.reason.empty());
  // Whatever the nonsense model said, the measured REVERT stands.
  EXPECT_EQ(Stands(Verdict::kRevert, v), Verdict::kRevert);
  for (const auto& r : runtime_->client().rejections()) {
    // The grammar makes the shape right; only a reply cut off by the token limit may fail.
    EXPECT_EQ(r.kind, "malformed_json") << r.detail;
  }
  EXPECT_GE(runtime_->meter().totals().calls, 1);
  EXPECT_GT(runtime_->meter().totals().output_tokens, 0);
  EXPECT_FALSE(runtime_->meter().totals().estimated);  // llama-server reports usage
  EXPECT_DOUBLE_EQ(runtime_->meter().totals().cost_usd, 0);  // a loopback server is free
  EXPECT_TRUE(events_.empty());
}

TEST_F(RealLlmTest, ASessionDrivenByNonsenseStaysSafe) {
  const target::KnobCatalog& catalog = adapter_->catalog();
  // A random model, free to answer "no ideas", mostly does: make it propose (at least
  // one idea per turn) so its nonsense reaches the proposer's checks.
  AgentData data = testing::Data();
  json schema = data.orchestrator_schema.json();
  schema["properties"]["ideas"]["minItems"] = 1;
  // Short strings keep a random model's replies inside the output limit (and the test fast).
  json& idea = schema["properties"]["ideas"]["items"]["properties"];
  idea["title"]["maxLength"] = 24;
  idea["rationale"]["maxLength"] = 24;
  idea["delta"]["maxItems"] = 2;
  idea["delta"]["items"]["properties"]["value"]["maxLength"] = 12;
  ASSERT_OK_AND_ASSIGN(data.orchestrator_schema, JsonSchema::FromJson(schema, "test"));
  Orchestrator orchestrator(runtime_->client(), data);
  search::CatalogProposer fallback(catalog, {});
  AgentProposerOptions po;
  po.ideas_per_turn = 1;
  po.max_turns = 3;
  po.max_failed_turns = 2;
  po.protected_knobs = {"model", "host", "port", "api_key", "alias", "chat_template", "seed"};
  AgentProposer proposer(orchestrator, catalog, po, &fallback);

  session::FakeExecutor exec;
  exec.clock = &clock_;
  exec.run_dir = dir_->path().string();
  exec.factors = {{"threads=1", 1.3}};  // the only real gain on offer
  session::SessionServices svc;
  svc.executor = &exec;
  svc.proposer = &proposer;
  svc.clock = &clock_;
  svc.risky = [](const Config&) { return false; };
  svc.enablement = [](const std::string&) { return std::vector<Config>{}; };
  spec::SessionSpec spec;
  spec.name = "nonsense";
  spec.target.model.path = "/m.gguf";
  spec.budget.wall_s = 3600;
  spec.budget.max_cycles = 1;
  spec.budget.max_trials = 60;
  spec.measurement.aa_pairs = 2;
  session::Coordinator c(spec, svc, session::Coordinator::NewState(spec, dir_->path().string(), clock_));
  ASSERT_OK_AND_ASSIGN(session::SessionState s, c.Run());
  EXPECT_EQ(s.phase, session::Phase::kDone);
  EXPECT_GE(proposer.Describe().find("orchestrator turns"), 0u);
  std::cerr << proposer.Describe() << runtime_->meter().Summary() << "\n";
  for (const auto& r : runtime_->client().rejections()) std::cerr << "rejected reply: " << r.kind << ": " << r.detail << "\n";
  // Every measured configuration is one the catalog accepts, and every agent idea
  // changes only real, searchable knobs.
  int agent_candidates = 0;
  for (const auto& cand : s.candidates) {
    EXPECT_OK(catalog.Validate(cand.config));
    if (cand.idea.starts_with("agent:")) {
      ++agent_candidates;
      for (const auto& [k, v] : cand.delta.values()) {
        const target::Knob* knob = catalog.Find(k);
        ASSERT_NE(knob, nullptr) << k;
        EXPECT_TRUE(knob->searchable) << k;
        EXPECT_OK(knob->ValidateValue(v));
      }
    }
  }
  // Nonsense was proposed and refused as data, not measured.
  size_t refused = proposer.rejections().size() + runtime_->client().rejections().size();
  EXPECT_GT(refused + static_cast<size_t>(agent_candidates), 0u);
  for (const auto& r : proposer.rejections()) {
    EXPECT_TRUE(r.rule.starts_with("agent.")) << r.rule;
    EXPECT_FALSE(r.message.empty());
  }
  // What is kept was measured: the best is stock or a KEEP, with its trials.
  if (!s.best.empty()) {
    bool kept = false;
    for (const auto& cand : s.candidates) kept = kept || (cand.verdict == Verdict::kKeep && s.best == cand.config);
    EXPECT_TRUE(kept) << s.best.ToString();
  }
  EXPECT_GE(runtime_->meter().totals().calls, 1);
  ASSERT_OK_AND_ASSIGN(std::string transcript, sys::ReadFile(dir_->path() / "agent_calls.jsonl"));
  EXPECT_NE(transcript.find("\"role\":\"orchestrator\""), std::string::npos);
}

}  // namespace
}  // namespace hone::agent
