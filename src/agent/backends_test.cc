// The Anthropic Messages backend over a scripted loopback endpoint, coding-agent CLI
// backends as real child processes (small shell scripts standing in for claude and
// codex), and building a runtime from a config.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "agent/cli_backend.h"
#include "agent/http_backends.h"
#include "agent/runtime.h"
#include "testing/agent_endpoint.h"
#include "core/strings.h"
#include "testing/fake_clock.h"

namespace hone::agent {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

class BackendsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-agent-backends");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
  }
  // Writes an executable shell script standing in for a coding-agent CLI.
  std::string Script(const std::string& name, const std::string& body) {
    std::string path = (dir_->path() / name).string();
    EXPECT_OK(sys::WriteFileAtomic(path, "#!/bin/sh\n" + body));
    chmod(path.c_str(), 0755);
    return path;
  }
  EnvLookup Env(std::map<std::string, std::string> vars) {
    return [vars](const std::string& k) -> std::optional<std::string> {
      auto it = vars.find(k);
      if (it == vars.end()) return std::nullopt;
      return it->second;
    };
  }
  CliBackendOptions Cli(const std::string& script, const std::string& output) {
    CliBackendOptions o;
    o.name = "fake";
    o.preset.argv = {script, "-p", "{prompt}"};
    o.preset.output = output;
    o.preset.worst_case_usd = 0.5;
    o.preset.credential_patterns = {"invalid api key"};
    o.price = ModelPrice{1, 2};
    o.timeout = 20s;
    o.env = Env({});
    return o;
  }
  ChatRequest Req() {
    ChatRequest r;
    r.system = "sys";
    r.messages.push_back({"user", "do the thing"});
    return r;
  }

  std::unique_ptr<sys::TempDir> dir_;
  Redactor redactor_;
  RealTransport transport_;
  hone::testing::FakeClock clock_;
};

TEST_F(BackendsTest, AnthropicForcesTheSchemaToolAndParsesItsInput) {
  auto ep = testing::ScriptedEndpoint::Start();
  ep->Push(testing::AnthropicToolReply({{"approve", false}, {"reason", "thin"}, {"learning", "l"}}, 300, 40));
  HttpBackendOptions o;
  o.base_url = ep->url("");
  o.model = "claude-sonnet-x";
  o.key = Secret("sk-ant-test-0123456789abcdef");
  o.price = ModelPrice{3, 15};
  AnthropicBackend b(o, transport_, redactor_);
  ChatRequest r = Req();
  r.schema = &testing::Data().critic_schema;
  ASSERT_OK_AND_ASSIGN(ChatReply reply, b.Complete(r));
  EXPECT_EQ(json::parse(reply.text)["reason"], "thin");
  EXPECT_EQ(reply.usage.input_tokens, 300);
  EXPECT_NEAR(reply.usage.cost_usd, (300 * 3 + 40 * 15) * 1e-6, 1e-12);
  auto reqs = ep->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/v1/messages");
  EXPECT_NE(reqs[0].headers.find("x-api-key: sk-ant-test-0123456789abcdef"), std::string::npos);
  EXPECT_NE(reqs[0].headers.find("anthropic-version: 2023-06-01"), std::string::npos);
  json body = json::parse(reqs[0].body);
  EXPECT_EQ(body["system"], "sys");
  EXPECT_EQ(body["tool_choice"]["name"], "critic_verdict");
  EXPECT_EQ(body["tools"][0]["input_schema"]["required"][0], "approve");
  EXPECT_FALSE(body["tools"][0]["input_schema"].contains("$schema"));
}

TEST_F(BackendsTest, AnthropicAuthenticationErrorIsACredentialFailure) {
  auto ep = testing::ScriptedEndpoint::Start();
  ep->Push({401, R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})", {}, {}});
  HttpBackendOptions o;
  o.base_url = ep->url("");
  o.model = "claude-x";
  o.key = Secret("sk-ant-test-0123456789abcdef");
  AnthropicBackend b(o, transport_, redactor_);
  auto r = b.Complete(Req());
  ASSERT_FALSE(r);
  EXPECT_EQ(FailureOf(r.error()), FailureClass::kCredentials);
  EXPECT_NE(r.error().message.find("authentication_error"), std::string::npos);
}

TEST_F(BackendsTest, CliTextModeRunsInTheWorkdirWithThePrompt) {
  std::string s = Script("agent", "pwd > seen_cwd.txt; printf '%s' \"$2\" > seen_prompt.txt; echo '  the answer  '\n");
  auto work = dir_->path() / "work";
  ASSERT_OK(sys::EnsureDir(work));
  CliBackend b(Cli(s, "text"), redactor_);
  ChatRequest r = Req();
  r.workdir = work.string();
  ASSERT_OK_AND_ASSIGN(ChatReply reply, b.Complete(r));
  EXPECT_EQ(reply.text, "the answer");
  EXPECT_TRUE(reply.usage.estimated);  // nothing reported: charged the worst case
  EXPECT_DOUBLE_EQ(reply.usage.cost_usd, 0.5);
  EXPECT_EQ(Trim(*sys::ReadFile(work / "seen_cwd.txt")), work.string());
  EXPECT_NE(sys::ReadFile(work / "seen_prompt.txt")->find("do the thing"), std::string::npos);
}

TEST_F(BackendsTest, CliPromptFileStaysOutsideTheWorkdir) {
  std::string s = Script("agent", "cat \"$2\" > seen.txt; echo \"$2\" > path.txt; echo ok\n");
  auto work = dir_->path() / "work";
  ASSERT_OK(sys::EnsureDir(work));
  CliBackendOptions o = Cli(s, "text");
  o.preset.argv = {s, "-f", "{prompt_file}"};
  CliBackend b(o, redactor_);
  ChatRequest r = Req();
  r.workdir = work.string();
  ASSERT_OK(b.Complete(r));
  EXPECT_NE(sys::ReadFile(work / "seen.txt")->find("do the thing"), std::string::npos);
  std::string path(Trim(*sys::ReadFile(work / "path.txt")));
  EXPECT_FALSE(path.starts_with(work.string())) << path;
}

TEST_F(BackendsTest, ClaudeJsonReportsUsageAndCost) {
  std::string s = Script("claude", R"(echo 'some log line on stderr' >&2
echo '{"type":"result","subtype":"success","is_error":false,"result":"{\"approve\":true}","total_cost_usd":0.0123,"usage":{"input_tokens":900,"cache_read_input_tokens":100,"output_tokens":50}}'
)");
  CliBackend b(Cli(s, "claude_json"), redactor_);
  ASSERT_OK_AND_ASSIGN(ChatReply reply, b.Complete(Req()));
  EXPECT_EQ(reply.text, "{\"approve\":true}");
  EXPECT_EQ(reply.usage.input_tokens, 1000);
  EXPECT_EQ(reply.usage.output_tokens, 50);
  EXPECT_DOUBLE_EQ(reply.usage.cost_usd, 0.0123);
  EXPECT_FALSE(reply.usage.estimated);
}

TEST_F(BackendsTest, CodexJsonlTakesTheLastAgentMessage) {
  std::string s = Script("codex", R"(echo '{"type":"thread.started","thread_id":"t"}'
echo '{"type":"item.completed","item":{"id":"1","type":"reasoning","text":"thinking"}}'
echo '{"type":"item.completed","item":{"id":"2","type":"agent_message","text":"first"}}'
echo '{"type":"item.completed","item":{"id":"3","type":"agent_message","text":"final answer"}}'
echo '{"type":"turn.completed","usage":{"input_tokens":2000,"cached_input_tokens":0,"output_tokens":300}}'
)");
  CliBackend b(Cli(s, "codex_jsonl"), redactor_);
  ASSERT_OK_AND_ASSIGN(ChatReply reply, b.Complete(Req()));
  EXPECT_EQ(reply.text, "final answer");
  EXPECT_EQ(reply.usage.input_tokens, 2000);
  EXPECT_NEAR(reply.usage.cost_usd, (2000 * 1 + 300 * 2) * 1e-6, 1e-12);
}

TEST_F(BackendsTest, CliLoginFailureDisablesTheBackendThroughTheClient) {
  std::string count = (dir_->path() / "runs").string();
  std::string s = Script("claude", "echo run >> " + count + R"(
echo '{"type":"result","subtype":"error","is_error":true,"result":"Invalid API key · Please run /login"}'
exit 1
)");
  CliBackend b(Cli(s, "claude_json"), redactor_);
  UsageMeter meter({});
  std::vector<std::string> events;
  LlmClient client(b, meter, clock_, redactor_, nullptr,
                   {testing::Data().retry, [&](const std::string& l) { events.push_back(l); }});
  auto r = client.Chat("specialist", Req());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kPermissionDenied);
  EXPECT_FALSE(client.Chat("specialist", Req()));
  EXPECT_EQ(Split(std::string(Trim(*sys::ReadFile(count))), '\n').size(), 1u);  // ran once
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0].find("credentials rejected"), std::string::npos);
}

TEST_F(BackendsTest, CliKeyGoesThroughTheEnvironmentNeverTheCommandLine) {
  std::string s = Script("agent", R"(case "$*" in *sk-live-canary*) echo 'KEY ON ARGV'; exit 3;; esac
[ "$FAKE_AGENT_KEY" = "sk-live-canary-000111222333" ] && echo key-ok || echo key-missing
)");
  CliBackendOptions o = Cli(s, "text");
  o.preset.api_key_env = "FAKE_AGENT_KEY";
  o.env = Env({{"FAKE_AGENT_KEY", "sk-live-canary-000111222333"}});
  CliBackend b(o, redactor_);
  ASSERT_OK_AND_ASSIGN(ChatReply reply, b.Complete(Req()));
  EXPECT_EQ(reply.text, "key-ok");
  for (const auto& a : b.Argv("prompt", "/tmp/p")) EXPECT_EQ(a.find("canary"), std::string::npos);
}

TEST_F(BackendsTest, CliMissingKeyIsACredentialFailure) {
  CliBackendOptions o = Cli(Script("agent", "echo hi\n"), "text");
  o.preset.api_key_env = "UNSET_AGENT_KEY";
  CliBackend b(o, redactor_);
  auto r = b.Complete(Req());
  ASSERT_FALSE(r);
  EXPECT_EQ(FailureOf(r.error()), FailureClass::kCredentials);
  EXPECT_NE(r.error().message.find("UNSET_AGENT_KEY is not set"), std::string::npos) << r.error().message;
}

TEST_F(BackendsTest, CliTimeoutKillsTheRunAndIsNotRetried) {
  std::string count = (dir_->path() / "runs").string();
  CliBackendOptions o = Cli(Script("agent", "echo run >> " + count + "\nsleep 30\n"), "text");
  o.timeout = 500ms;
  CliBackend b(o, redactor_);
  UsageMeter meter({});
  LlmClient client(b, meter, clock_, redactor_, nullptr, {testing::Data().retry, nullptr});
  auto r = client.Chat("specialist", Req());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kDeadlineExceeded);
  EXPECT_EQ(Split(std::string(Trim(*sys::ReadFile(count))), '\n').size(), 1u);
  EXPECT_FALSE(client.disabled());
}

TEST_F(BackendsTest, RuntimeFromSpecAndConfigErrors) {
  spec::AgentsSpec a;
  a.mode = "anthropic";
  a.model = "claude-sonnet-4";
  a.max_cost_usd = 2;
  ASSERT_OK_AND_ASSIGN(BackendConfig c, BackendConfigFromSpec(a));
  EXPECT_EQ(c.kind, "anthropic");
  EXPECT_EQ(c.api_key_env, "ANTHROPIC_API_KEY");
  EXPECT_EQ(c.base_url, "https://api.anthropic.com");
  // The key is read from the environment only: unset, the runtime is refused up front.
  auto rt = AgentRuntime::Create(c, testing::Data(), "", clock_, Env({}));
  ASSERT_FALSE(rt);
  EXPECT_NE(rt.error().message.find("ANTHROPIC_API_KEY is not set"), std::string::npos) << rt.error().message;
  ASSERT_OK_AND_ASSIGN(auto ok, AgentRuntime::Create(c, testing::Data(), "", clock_,
                                                     Env({{"ANTHROPIC_API_KEY", "sk-ant-abcdefghijkl"}})));
  EXPECT_EQ(ok->backend().name(), "anthropic:claude-sonnet-4");
  EXPECT_DOUBLE_EQ(ok->meter().limits().max_usd, 2);
  EXPECT_EQ(ok->meter().limits().max_calls, testing::Data().default_limits.max_calls);
  // A remote OpenAI-compatible endpoint without a key variable is refused.
  BackendConfig remote{.kind = "openai", .base_url = "http://10.1.2.3:8000/v1", .model = "m"};
  EXPECT_FALSE(AgentRuntime::Create(remote, testing::Data(), "", clock_, Env({})));
  // A loopback one needs none and is free.
  BackendConfig local{.kind = "openai", .base_url = "http://127.0.0.1:9/v1", .model = "m"};
  EXPECT_OK(AgentRuntime::Create(local, testing::Data(), "", clock_, Env({})));
  spec::AgentsSpec bad;
  bad.mode = "gpt";
  EXPECT_FALSE(BackendConfigFromSpec(bad));
  spec::AgentsSpec none;
  EXPECT_FALSE(BackendConfigFromSpec(none));
  BackendConfig cli{.kind = "cli", .preset = "claude"};
  ASSERT_OK_AND_ASSIGN(auto crt, AgentRuntime::Create(cli, testing::Data(), "", clock_, Env({})));
  EXPECT_EQ(crt->backend().name(), "cli:claude");
  // A second backend shares the session's cap and redactor.
  BackendConfig codex{.kind = "cli", .preset = "codex"};
  ASSERT_OK_AND_ASSIGN(LlmClient* second,
                       ok->AddBackend(codex, Env({{"OPENAI_API_KEY", "sk-second-key-abcdefgh"}})));
  EXPECT_EQ(second->backend().name(), "cli:codex");
  EXPECT_EQ(&second->meter(), &ok->meter());
  EXPECT_TRUE(ok->redactor().Leaks("x sk-second-key-abcdefgh"));
  EXPECT_TRUE(ok->redactor().Leaks("x sk-ant-abcdefghijkl"));
}

TEST(TransportTest, TheCurlPathSendsHeadersAndReadsStatusAndBody) {
  if (!HttpsSupported()) GTEST_SKIP() << "built without libcurl";
  auto ep = testing::ScriptedEndpoint::Start();
  ep->Push({429, R"({"error":"slow"})", {{"Retry-After", "3"}}, {}});
  ep->Push({200, R"({"ok":true})", {}, std::chrono::milliseconds(1500)});
  TransportRequest r{ep->url("/v1/messages"), {{"x-api-key", "k-123456"}}, R"({"a":1})", 5s};
  ASSERT_OK_AND_ASSIGN(TransportResponse first, PostWithCurl(r));
  EXPECT_EQ(first.status, 429);
  EXPECT_EQ(first.Header("retry-after"), "3");
  EXPECT_EQ(first.body, R"({"error":"slow"})");
  auto reqs = ep->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].body, R"({"a":1})");
  EXPECT_NE(reqs[0].headers.find("x-api-key: k-123456"), std::string::npos);
  EXPECT_NE(reqs[0].headers.find("Content-Type: application/json"), std::string::npos);
  r.timeout = 300ms;
  auto late = PostWithCurl(r);
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, ErrorCode::kDeadlineExceeded);
  EXPECT_EQ(late.error().ToString().find("k-123456"), std::string::npos);
  EXPECT_TRUE(IsLoopbackUrl("http://127.0.0.1:8080/v1"));
  EXPECT_TRUE(IsLoopbackUrl("http://localhost/v1"));
  EXPECT_FALSE(IsLoopbackUrl("https://api.anthropic.com"));
}

TEST(UsageTest, PricesMatchTheLongestPrefix) {
  PriceTable t(ModelPrice{15, 75}, {{"gpt-4o", {2.5, 10}}, {"gpt-4o-mini", {0.15, 0.6}}});
  EXPECT_DOUBLE_EQ(t.For("gpt-4o-mini-2024").input_usd_per_mtok, 0.15);
  EXPECT_DOUBLE_EQ(t.For("gpt-4o-2024").input_usd_per_mtok, 2.5);
  EXPECT_DOUBLE_EQ(t.For("mystery").output_usd_per_mtok, 75);
}

TEST(RedactorTest, MasksRegisteredSecretsAndKeyShapedTokens) {
  Redactor r;
  r.Add("hunter2-very-secret");
  r.Add("abc");  // too short to mask safely: ignored
  EXPECT_EQ(r.Redact("x hunter2-very-secret y"), "x [redacted] y");
  EXPECT_EQ(r.Redact("key sk-proj-ABCDEFGHIJKLMNOP1234 end"), "key [redacted] end");
  EXPECT_EQ(r.Redact("Authorization: Bearer abcdefghijklmnopqrstu"), "Authorization: [redacted]");
  EXPECT_EQ(r.Redact("abc"), "abc");
  EXPECT_TRUE(r.Leaks("..hunter2-very-secret.."));
  Error e{ErrorCode::kInternal, "bad hunter2-very-secret", {{"body", "hunter2-very-secret"}}};
  Error masked = r.Redact(e);
  EXPECT_EQ(masked.ToString().find("hunter2"), std::string::npos);
}

}  // namespace
}  // namespace hone::agent
