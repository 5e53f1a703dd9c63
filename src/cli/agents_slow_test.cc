// `hone run` with agents, as a user runs it: the real hone binary, a real llama-server
// serving a synthesized model, and agents pointed at a scripted OpenAI-compatible
// endpoint (a real HTTP server on 127.0.0.1 in this test process, answering each role
// from its transcript). The orchestrator's idea is measured, the critic refuses the
// KEEP it earned and the report says so; the API key never reaches a file. Problems
// with the agents stop `hone run` before the session starts, and `--agents none` runs
// the planner alone.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "net/raw_server.h"
#include "session/patch_lane.h"
#include "sys/files.h"
#include "sys/process.h"
#include "testing/agent_endpoint.h"
#include "testing/llama_env.h"
#include "testing/test_util.h"

namespace hone {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using agent::testing::Ideas;
using agent::testing::OpenAiJson;
using agent::testing::RoleEndpoint;

constexpr char kKeyVar[] = "HONE_E2E_AGENT_KEY";
constexpr char kKey[] = "canary-e2e-4b1d9c7e2a6f3058";

std::string Hone() { return (testing::BinaryDir() / "src/cli/hone").string(); }

sys::CommandOutput RunHone(std::vector<std::string> args, std::chrono::milliseconds timeout) {
  args.insert(args.begin(), Hone());
  auto out = sys::RunCommand({.argv = args, .env = {{kKeyVar, kKey}}}, timeout);
  EXPECT_TRUE(out) << out.error().ToString();
  return out ? *out : sys::CommandOutput{};
}

class CliAgentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HONE_REQUIRE_LLAMA();
    auto d = sys::TempDir::Create("hone-cli-agents");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    model_ = Path("agents-tiny.gguf");
    ASSERT_OK(sys::WriteFileAtomic(model_, *sys::ReadFile(testing::SynthModel("tiny", "q8_0"))));
  }
  std::string Path(const std::string& n) { return (dir_->path() / n).string(); }
  // A session spec: one slot (parallel 1) serving 8 concurrent clients as the stock;
  // trials long enough that a 2-core host's noise averages out.
  // `screen`: false when a test needs the idea measured in pairs whatever one trial says.
  std::string Spec(const std::string& agents, const std::string& budget, bool screen = true) {
    std::string spec = R"(name: agents-e2e
target:
  model: )" + model_ + R"(
  base_config: {parallel: 1}
workload: {isl: 32, osl: 32, concurrency: 8, num_prompts: 16, warmups: 1}
objective: {metric: total_tps_per_gpu}
accuracy: {probes: 2, probe_tokens: 4}
budget: )" + budget + R"(
measurement: {min_pairs: 3, max_pairs: 3, aa_pairs: 2, screen: )" + std::string(screen ? "true" : "false") + R"(}
search: {knobs: [parallel, threads]}
kb: {path: )" + Path("kb.sqlite") + "}\n" + agents;
    std::string file = Path("spec-" + std::to_string(++specs_) + ".yaml");
    EXPECT_OK(sys::WriteFileAtomic(file, spec));
    return file;
  }
  std::unique_ptr<sys::TempDir> dir_;
  std::string model_;
  int specs_ = 0;
};

nlohmann::json Load(const std::string& file) {
  auto text = sys::ReadFile(file);
  return text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
}

TEST_F(CliAgentsTest, TheOrchestratorsIdeaIsMeasuredAndTheCriticRefusesItsKeep) {
  auto ep = RoleEndpoint::Start();
  ep->Push("orchestrator", OpenAiJson(Ideas({{{{"parallel", "8"}}, 300.0}})));
  ep->SetDefault("orchestrator", OpenAiJson(Ideas({})));
  ep->SetDefault("critic", OpenAiJson({{"approve", false},
                                       {"reason", "scripted critic: one slot is the production contract"},
                                       {"learning", "parallel slots change the serving contract"}}));
  ep->SetDefault("robustness", OpenAiJson({{"action", "reset_ideas"}, {"reason", "scripted"}}));
  std::string agents = "agents:\n  mode: openai\n  endpoint: " + ep->url() +
                       "\n  model: scripted\n  api_key_env: " + kKeyVar +
                       "\n  max_cost_usd: 1\n  roles: [orchestrator, critic, robustness]\n";
  std::string out = Path("run");
  // No screening: under ctest -j2 one trial of parallel=8 once measured 60% worse and
  // was screened out, and the idea never reached its pairs or the critic.
  auto r = RunHone({"run", Spec(agents, "{wall: 240s, max_cycles: 1}", /*screen=*/false), "--out", out}, 420s);
  ASSERT_EQ(r.status.code, 0) << LastLines(r.output, 40);
  SCOPED_TRACE(LastLines(r.output, 40));
  EXPECT_NE(r.output.find("agents: openai:scripted@"), std::string::npos);

  nlohmann::json state = Load(out + "/state.json");
  ASSERT_TRUE(state.is_object());
  nlohmann::json idea;
  for (const auto& c : state["candidates"]) {
    if (c.value("idea", "") == "agent:parallel=8") idea = c;
  }
  ASSERT_TRUE(idea.is_object()) << state["candidates"].dump(1);
  // Measured by hone in pairs and reviewed by the critic, which refuses everything. A
  // measured KEEP becomes REVERT with the critic's reason; any other measured verdict
  // stands (a refusal only ever makes an outcome more conservative). Which one this
  // host measures depends on its noise; agents_test.cc covers the KEEP path exactly.
  EXPECT_GE(idea["candidate_trials"].size(), 3u) << idea.dump(1);
  EXPECT_TRUE(idea.value("critic", "").starts_with("refused: scripted critic")) << idea.dump(1);
  const std::string reason = idea.value("reason", "");
  if (reason.starts_with("measured KEEP")) {
    EXPECT_EQ(idea.value("verdict", ""), "REVERT") << idea.dump(1);
    EXPECT_NE(reason.find("but the critic refused: scripted critic"), std::string::npos) << idea.dump(1);
    std::printf("parallel=8 measured KEEP, refused by the critic: %s\n", reason.c_str());
  } else {
    EXPECT_NE(idea.value("verdict", ""), "KEEP") << idea.dump(1);
    std::printf("parallel=8 measured %s on this host (no KEEP to refuse): %s\n", idea.value("verdict", "").c_str(),
                reason.c_str());
  }
  EXPECT_GE(ep->count("orchestrator"), 1u);
  EXPECT_GE(ep->count("critic"), 1u);
  // The critic saw hone's measured noise floor, not 0.
  bool floor = false;
  for (const auto& req : ep->requests()) {
    if (RoleEndpoint::RoleOf(req.body) == "critic" && Contains(req.body, "noise floor") &&
        !Contains(req.body, "noise floor 0%")) {
      floor = true;
    }
  }
  EXPECT_TRUE(floor);

  auto report = sys::ReadFile(out + "/report.md");
  ASSERT_TRUE(report);
  size_t at = report->find("## Agents");
  ASSERT_NE(at, std::string::npos);
  std::string section = report->substr(at, report->find("\n## ", at + 4) - at);
  std::printf("%s\n", section.c_str());
  EXPECT_NE(section.find("ideas: 1 proposed by the orchestrator, 0 rejected before measurement, 1 measured, 0 kept"),
            std::string::npos);
  EXPECT_NE(section.find(" refused ("), std::string::npos);
  EXPECT_NE(section.find("- " + idea.value("id", "?") + " (parallel=8, measured "), std::string::npos);
  EXPECT_NE(section.find("scripted critic: one slot is the production contract"), std::string::npos);
  EXPECT_NE(section.find("| parallel=8 | +300.0% |"), std::string::npos);
  EXPECT_NE(section.find("usage: "), std::string::npos);

  // The key went to the endpoint as the credential, and nowhere else.
  ASSERT_FALSE(ep->requests().empty());
  EXPECT_NE(ep->requests().front().headers.find(std::string("Bearer ") + kKey), std::string::npos);
  for (const auto& e : fs::recursive_directory_iterator(out)) {
    if (!e.is_regular_file()) continue;
    auto text = sys::ReadFile(e.path().string());
    EXPECT_TRUE(text && text->find(kKey) == std::string::npos) << e.path();
  }
  EXPECT_EQ(r.output.find(kKey), std::string::npos);
}

// A specialist's source change the whole way, as `hone run bench/agents/specialist.yaml`
// runs it: the shipped scripted coding-agent CLI edits its worktree of the provisioned
// llama.cpp checkout (the automatic slot count 4 -> 8), the gate and the critic sign
// off, the patch lane rebuilds llama-server and llama-perplexity (ccache-backed: seconds
// once the cache holds the slot's objects, ~9 minutes cold on 2 cores), the accuracy
// gate runs the patched build, the paired protocol measures it against the stock at
// concurrency 8 and the close re-validates it. ctest runs it alone (RUN_SERIAL).
TEST_F(CliAgentsTest, ASpecialistsSourceChangeIsRebuiltMeasuredAndKept) {
  const target::Provisioned* prov = testing::Llama();
  ASSERT_NE(prov, nullptr);
  auto git = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", prov->src_dir.string()});
    auto o = sys::RunCommand({.argv = args}, 60s);
    EXPECT_TRUE(o && o->status.success()) << Join(args, " ") << ": " << (o ? o->output : o.error().ToString());
    return o ? std::string(Trim(o->output)) : std::string();
  };
  const std::string coder = (testing::SourceDir() / "bench/agents/scripted-coder.sh").string();
  const std::string spec = Path("specialist.yaml");
  ASSERT_OK(sys::WriteFileAtomic(spec, R"(name: specialist-e2e
target:
  model: {preset: small, seed: 42}
workload: {isl: 64, osl: 64, concurrency: 8, num_prompts: 16, warmups: 1}
objective: {metric: total_tps_per_gpu}
budget: {wall: 20m, max_cycles: 1}
measurement: {min_pairs: 3, max_pairs: 10, aa_pairs: 2}
search: {knobs: [poll]}
kb: {path: )" + Path("kb.sqlite") + R"(}
agents:
  mode: cli
  command: [)" + coder + R"(, "{prompt_file}"]
  roles: [critic, specialist]
  max_cost_usd: 20
  specialist_tasks:
    - {title: more default slots, goal: "Make the automatic slot count fit 8 concurrent requests.",
       files: [tools/server/server.cpp]}
)"));
  const std::string head = git({"rev-parse", "HEAD"});
  const std::string out = Path("run");
  auto r = RunHone({"run", spec, "--out", out}, 1800s);
  ASSERT_EQ(r.status.code, 0) << LastLines(r.output, 40);
  SCOPED_TRACE(LastLines(r.output, 40));
  // Every stage said so as it ran.
  for (const char* stage : {"patch s1-more-default-slots: the writer works on 'more default slots'",
                            "patch s1-more-default-slots: the reviewer reads the diff (1 file(s), +2/-2)",
                            "patch s1-more-default-slots: signed off:", "patch s1-more-default-slots: built in "}) {
    EXPECT_NE(r.output.find(stage), std::string::npos) << stage;
  }
  nlohmann::json state = Load(out + "/state.json");
  ASSERT_TRUE(state.is_object());
  nlohmann::json patch;
  for (const auto& c : state["candidates"]) {
    if (c.value("patch", "") == "s1-more-default-slots") patch = c;
  }
  ASSERT_TRUE(patch.is_object()) << state["candidates"].dump(1);
  // Eight slots for eight clients instead of four: +25% measured on this host, quiet.
  // Up to ten pairs: on a loaded CI host six pairs of a +15.5% gain (per-pair ratios
  // 0.95-1.29) left the interval at [0.976, 1.368], INCONCLUSIVE; ten pairs of that
  // spread put its lower end above the keep threshold.
  EXPECT_EQ(patch.value("verdict", ""), "KEEP") << patch.dump(1);
  EXPECT_TRUE(patch.value("accuracy", "").find("the patched build's llama-perplexity") != std::string::npos)
      << patch.value("accuracy", "");
  const std::string kept = out + "/bin/llama-server-s1-more-default-slots";
  EXPECT_EQ(state.value("server_binary", ""), kept);
  // The close re-measures the patch against the stock in up to max_pairs pairs: KEEP
  // on a quiet host; on a noisy one (CI: stock trials 161-199 tok/s) the pairs of a
  // +23% gain can leave the interval across 1, and INCONCLUSIVE is then the honest
  // verdict. Never REVERT: the patched build is what the session kept.
  EXPECT_TRUE(state.value("validated", false));
  const std::string close = state.value("validation_verdict", "");
  EXPECT_TRUE(close == "KEEP" || close == "INCONCLUSIVE") << close;
  // The summary names the patched build under the best's knobs (poll may have been kept too).
  const size_t best = r.output.find("\n  best      ");
  ASSERT_NE(best, std::string::npos);
  EXPECT_NE(r.output.substr(best, r.output.find('\n', best + 1) - best).find(" on build llama-server-s1-more-default-slots"),
            std::string::npos);
  EXPECT_NE(r.output.find("not recorded: the best runs a patched build"), std::string::npos);
  // The kept diff is on the session's own accepted line; the checkout's HEAD and tree
  // are untouched.
  const std::string branch = session::BranchPrefix(out) + "/accepted";
  EXPECT_NE(git({"show", branch + ":tools/server/server.cpp"}).find("params.n_parallel = 8;"), std::string::npos);
  EXPECT_EQ(git({"rev-parse", "HEAD"}), head);
  EXPECT_EQ(git({"status", "--porcelain", "--untracked-files=no"}), "");
  git({"branch", "-D", branch});
  // The report names the patch, the Agents section its outcome and the claim.
  auto report = sys::ReadFile(out + "/report.md");
  ASSERT_TRUE(report);
  EXPECT_NE(report->find("`patch s1-more-default-slots` | **KEEP**"), std::string::npos);
  EXPECT_NE(report->find("specialist: 1 diffs asked for, 1 kept"), std::string::npos);
  EXPECT_NE(report->find("its claims (not measurements): 2x"), std::string::npos);
  std::printf("specialist patch: %s; close: %s\n", patch.value("reason", "").c_str(),
              state.value("validation_verdict", "").c_str());
}

TEST_F(CliAgentsTest, AgentProblemsStopTheRunBeforeItStartsAndAgentsNoneRunsThePlanner) {
  auto closed = net::FreeLoopbackPort();
  ASSERT_OK(closed);
  std::string endpoint = "http://127.0.0.1:" + std::to_string(*closed) + "/v1";
  std::string agents = "agents: {mode: openai, endpoint: " + endpoint + ", model: m}\n";
  std::string spec = Spec(agents, "{wall: 60s, max_trials: 3}");
  auto r = RunHone({"run", spec, "--out", Path("unreachable")}, 120s);
  EXPECT_EQ(r.status.code, 1) << r.output;
  EXPECT_NE(r.output.find("hone: error: agents.endpoint " + endpoint + " is unreachable"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(Path("unreachable") + "/trials"));

  r = RunHone({"run", Spec("agents: {mode: gemini}\n", "{wall: 60s}"), "--out", Path("unknown")}, 120s);
  EXPECT_EQ(r.status.code, 2) << r.output;
  EXPECT_NE(r.output.find("hone: error: agents.mode: unknown mode 'gemini'"), std::string::npos) << r.output;

  r = RunHone({"run", spec, "--out", Path("bad-flag"), "--agents", "openai"}, 60s);
  EXPECT_NE(r.status.code, 0);

  // The same spec with --agents none: the planner alone, no agents section.
  r = RunHone({"run", spec, "--out", Path("planner"), "--agents", "none"}, 300s);
  ASSERT_EQ(r.status.code, 0) << LastLines(r.output, 30);
  auto report = sys::ReadFile(Path("planner") + "/report.md");
  ASSERT_TRUE(report);
  EXPECT_EQ(report->find("## Agents"), std::string::npos);
  EXPECT_FALSE(fs::exists(Path("planner") + "/agent_calls.jsonl"));
}

}  // namespace
}  // namespace hone
