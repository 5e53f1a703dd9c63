// LlmClient over real loopback HTTP (a scripted endpoint): retries, backoff, the
// credential stop, the spending cap, and schema-checked replies with re-asks.
#include "agent/client.h"

#include <gtest/gtest.h>

#include "agent/http_backends.h"
#include "testing/agent_endpoint.h"
#include "core/strings.h"
#include "testing/fake_clock.h"

namespace hone::agent {
namespace {

using json = nlohmann::json;
using testing::Canned;
using testing::OpenAiJson;
using testing::OpenAiReply;
using namespace std::chrono_literals;

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ep_ = testing::ScriptedEndpoint::Start();
    ASSERT_GT(ep_->port(), 0);
    auto d = sys::TempDir::Create("hone-agent-client");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    transcript_ = std::make_unique<Transcript>((dir_->path() / "agent_calls.jsonl").string(), redactor_);
  }
  // An OpenAI-compatible backend priced like a remote model ($10 / $30 per Mtok).
  LlmClient& Client(UsageLimits limits = {}, std::chrono::milliseconds timeout = 5s) {
    HttpBackendOptions o;
    o.base_url = ep_->url();
    o.model = "scripted";
    o.price = ModelPrice{10, 30};
    o.timeout = timeout;
    backend_ = std::make_unique<OpenAiBackend>(o, transport_, redactor_);
    meter_ = std::make_unique<UsageMeter>(limits);
    ClientOptions co;
    co.retry = testing::Data().retry;
    co.on_event = [this](const std::string& l) { events_.push_back(l); };
    client_ = std::make_unique<LlmClient>(*backend_, *meter_, clock_, redactor_, transcript_.get(), co);
    return *client_;
  }
  ChatRequest Req() {
    ChatRequest r;
    r.system = "you are a test";
    r.messages.push_back({"user", "hello"});
    r.max_output_tokens = 100;
    return r;
  }
  const JsonSchema& Schema() { return testing::Data().critic_schema; }
  static json Verdict() { return {{"approve", true}, {"reason", "fine"}, {"learning", "x"}}; }

  std::unique_ptr<testing::ScriptedEndpoint> ep_;
  std::unique_ptr<sys::TempDir> dir_;
  Redactor redactor_;
  RealTransport transport_;
  hone::testing::FakeClock clock_;
  std::unique_ptr<Transcript> transcript_;
  std::unique_ptr<OpenAiBackend> backend_;
  std::unique_ptr<UsageMeter> meter_;
  std::unique_ptr<LlmClient> client_;
  std::vector<std::string> events_;
};

TEST_F(ClientTest, AnswersAndAccountsTokensAndCost) {
  ep_->Push(OpenAiReply("hi there", 1000, 500));
  ASSERT_OK_AND_ASSIGN(ChatReply r, Client().Chat("orchestrator", Req()));
  EXPECT_EQ(r.text, "hi there");
  EXPECT_EQ(r.usage.input_tokens, 1000);
  EXPECT_EQ(r.usage.output_tokens, 500);
  EXPECT_FALSE(r.usage.estimated);
  EXPECT_NEAR(r.usage.cost_usd, (1000 * 10 + 500 * 30) * 1e-6, 1e-12);
  UsageTotals t = meter_->totals();
  EXPECT_EQ(t.calls, 1);
  EXPECT_NEAR(t.cost_usd, 0.025, 1e-12);
  EXPECT_EQ(meter_->by_role().at("orchestrator").calls, 1);
  // The request is an OpenAI chat completion with the system prompt first.
  auto reqs = ep_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/v1/chat/completions");
  json body = json::parse(reqs[0].body);
  EXPECT_EQ(body["model"], "scripted");
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["max_tokens"], 100);
  EXPECT_FALSE(body.contains("response_format"));
  EXPECT_EQ(reqs[0].headers.find("Authorization"), std::string::npos);  // no key configured: none sent
}

TEST_F(ClientTest, CredentialRejectionStopsTheBackendAtOnceAndReportsOnce) {
  ep_->Push({401, R"({"error":{"message":"Incorrect API key provided"}})", {}, {}});
  ep_->SetDefault(OpenAiReply("should never be asked"));
  LlmClient& c = Client();
  auto r = c.Chat("orchestrator", Req());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(ep_->count(), 1u);  // a 401 is never retried
  EXPECT_TRUE(c.disabled());
  for (int i = 0; i < 5; ++i) {
    auto again = c.Chat("critic", Req());
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().code, ErrorCode::kPermissionDenied);
  }
  EXPECT_EQ(ep_->count(), 1u);  // nothing more went over the network
  ASSERT_EQ(events_.size(), 1u);
  EXPECT_NE(events_[0].find("credentials rejected"), std::string::npos) << events_[0];
  EXPECT_NE(events_[0].find("HTTP 401"), std::string::npos) << events_[0];
  EXPECT_EQ(meter_->totals().calls, 1);
}

TEST_F(ClientTest, ForbiddenIsACredentialStopToo) {
  ep_->Push({403, R"({"error":"forbidden"})", {}, {}});
  LlmClient& c = Client();
  EXPECT_FALSE(c.Chat("critic", Req()));
  EXPECT_TRUE(c.disabled());
}

TEST_F(ClientTest, RateLimitIsRetriedAfterRetryAfter) {
  ep_->Push({429, R"({"error":"slow down"})", {{"Retry-After", "7"}}, {}});
  ep_->Push(OpenAiReply("ok"));
  int64_t before = clock_.MonoNanos();
  ASSERT_OK_AND_ASSIGN(ChatReply r, Client().Chat("orchestrator", Req()));
  EXPECT_EQ(r.text, "ok");
  EXPECT_EQ(ep_->count(), 2u);
  EXPECT_GE(clock_.MonoNanos() - before, 7'000'000'000);  // waited (on the fake clock) as asked
  EXPECT_EQ(meter_->totals().calls, 2);
}

TEST_F(ClientTest, ServerErrorsGiveUpAfterMaxAttemptsWithBackoff) {
  ep_->SetDefault({503, "overloaded", {}, {}});
  int64_t before = clock_.MonoNanos();
  auto r = Client().Chat("orchestrator", Req());
  ASSERT_FALSE(r);
  const RetryPolicy& rp = testing::Data().retry;
  EXPECT_EQ(ep_->count(), static_cast<size_t>(rp.max_attempts));
  EXPECT_NE(r.error().message.find("after " + std::to_string(rp.max_attempts) + " attempts"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(r.error().Get("http_status"), "503");
  // 1 + 2 + 4 s of backoff between four attempts.
  EXPECT_GE(clock_.MonoNanos() - before, 7'000'000'000);
  EXPECT_FALSE(client_->disabled());
}

TEST_F(ClientTest, AnUnparseableResponseBodyIsRetried) {
  ep_->Push({200, "<html>bad gateway</html>", {}, {}});
  ep_->Push(OpenAiReply("fine"));
  ASSERT_OK_AND_ASSIGN(ChatReply r, Client().Chat("orchestrator", Req()));
  EXPECT_EQ(r.text, "fine");
  EXPECT_EQ(ep_->count(), 2u);
}

TEST_F(ClientTest, ATimeoutIsRetried) {
  ep_->Push({200, OpenAiReply("late").body, {}, 2500ms});
  ep_->Push(OpenAiReply("on time"));
  auto r = Client({}, 1000ms).Chat("orchestrator", Req());
  ASSERT_OK(r);
  EXPECT_EQ(r->text, "on time");
  EXPECT_EQ(ep_->count(), 2u);
}

TEST_F(ClientTest, MalformedReplyIsARejectionAndIsReAsked) {
  ep_->Push(OpenAiReply("I think you should approve this. {not json"));
  ep_->Push(OpenAiJson(Verdict()));
  ASSERT_OK_AND_ASSIGN(StructuredReply r, Client().Structured("critic", Req(), Schema()));
  EXPECT_EQ(r.value["reason"], "fine");
  EXPECT_EQ(r.attempts, 2);
  ASSERT_EQ(r.rejections.size(), 1u);
  EXPECT_EQ(r.rejections[0].kind, "malformed_json");
  EXPECT_EQ(client_->rejections().size(), 1u);
  // The re-ask carries the bad reply and says what was wrong; the schema was sent.
  auto reqs = ep_->requests();
  ASSERT_EQ(reqs.size(), 2u);
  json second = json::parse(reqs[1].body);
  EXPECT_EQ(second["response_format"]["type"], "json_schema");
  EXPECT_EQ(second["response_format"]["json_schema"]["name"], "critic_verdict");
  std::string last = second["messages"].back()["content"];
  EXPECT_NE(last.find("rejected (malformed_json"), std::string::npos) << last;
  EXPECT_EQ(second["messages"][second["messages"].size() - 2]["role"], "assistant");
}

TEST_F(ClientTest, FencedJsonIsAccepted) {
  ep_->Push(OpenAiReply("```json\n" + Verdict().dump() + "\n```"));
  ASSERT_OK_AND_ASSIGN(StructuredReply r, Client().Structured("critic", Req(), Schema()));
  EXPECT_TRUE(r.value["approve"].get<bool>());
  EXPECT_TRUE(r.rejections.empty());
}

TEST_F(ClientTest, SchemaViolationsAreRejectedWithinLimits) {
  json bad = {{"approve", "yes"}, {"reason", "fine"}, {"learning", "x"}, {"extra", 1}};
  ep_->SetDefault(OpenAiJson(bad));
  auto r = Client().Structured("critic", Req(), Schema());
  ASSERT_FALSE(r);
  int asks = 1 + testing::Data().retry.max_invalid_replies;
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().Get("rejected"), std::to_string(asks));
  EXPECT_NE(r.error().message.find("/approve: expected boolean, got string"), std::string::npos) << r.error().message;
  EXPECT_EQ(ep_->count(), static_cast<size_t>(asks));
  auto rej = client_->rejections();
  ASSERT_EQ(rej.size(), static_cast<size_t>(asks));
  EXPECT_EQ(rej[0].kind, "schema_violation");
  EXPECT_NE(rej[0].detail.find("unexpected property 'extra'"), std::string::npos) << rej[0].detail;
}

TEST_F(ClientTest, ARoleCheckCanRejectASchemaValidReply) {
  ep_->Push(OpenAiJson(Verdict()));
  ep_->Push(OpenAiJson({{"approve", false}, {"reason", "no"}, {"learning", ""}}));
  ReplyCheck only_refusals = [](const json& v) { return v["approve"].get<bool>() ? "approvals are not allowed here" : ""; };
  ASSERT_OK_AND_ASSIGN(StructuredReply r, Client().Structured("critic", Req(), Schema(), only_refusals));
  EXPECT_FALSE(r.value["approve"].get<bool>());
  ASSERT_EQ(r.rejections.size(), 1u);
  EXPECT_EQ(r.rejections[0].kind, "role_check");
}

TEST_F(ClientTest, TheCostCapRefusesBeforeSending) {
  // Worst case of one request: ~10 input tokens + 100 output at $30/Mtok > $0.001.
  LlmClient& c = Client(UsageLimits{.max_usd = 0.001});
  auto r = c.Chat("orchestrator", Req());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(r.error().message.find("cost cap"), std::string::npos) << r.error().message;
  EXPECT_EQ(ep_->count(), 0u);
  EXPECT_FALSE(c.Chat("orchestrator", Req()));
  EXPECT_EQ(meter_->totals().refused, 2);
  ASSERT_EQ(events_.size(), 1u);  // reported once
  EXPECT_NE(events_[0].find("agent calls stopped"), std::string::npos);
}

TEST_F(ClientTest, TheCapStopsCallsOnceSpendReachesIt) {
  // Each call reports 20000 input tokens: $0.203, far above its estimate ($0.003).
  ep_->SetDefault(OpenAiReply("ok", 20000, 100));
  LlmClient& c = Client(UsageLimits{.max_usd = 0.25});
  EXPECT_OK(c.Chat("orchestrator", Req()));  // $0.203 spent
  EXPECT_OK(c.Chat("orchestrator", Req()));  // 0.203 + 0.003 worst case fits: $0.406 spent
  for (int i = 0; i < 3; ++i) {
    auto r = c.Chat("orchestrator", Req());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted);
  }
  EXPECT_EQ(ep_->count(), 2u);  // nothing was sent once spend passed the cap
  EXPECT_TRUE(meter_->exhausted());
  EXPECT_EQ(meter_->totals().refused, 3);
  EXPECT_NE(meter_->Summary().find("of $0.25 (3 refused by the cap)"), std::string::npos) << meter_->Summary();
}

TEST_F(ClientTest, CallAndTokenCapsHold) {
  ep_->SetDefault(OpenAiReply("ok", 10, 10));
  LlmClient& c = Client(UsageLimits{.max_calls = 2});
  EXPECT_OK(c.Chat("a", Req()));
  EXPECT_OK(c.Chat("a", Req()));
  auto third = c.Chat("a", Req());
  ASSERT_FALSE(third);
  EXPECT_NE(third.error().message.find("call cap"), std::string::npos);
  EXPECT_EQ(ep_->count(), 2u);
}

TEST_F(ClientTest, TheTranscriptRecordsEveryAttempt) {
  ep_->Push({503, "busy", {}, {}});
  ep_->Push(OpenAiReply("not json"));
  ep_->Push(OpenAiJson(Verdict()));
  ASSERT_OK(Client().Structured("critic", Req(), Schema()));
  ASSERT_OK_AND_ASSIGN(std::string text, sys::ReadFile(dir_->path() / "agent_calls.jsonl"));
  auto lines = Split(std::string(Trim(text)), '\n');
  ASSERT_EQ(lines.size(), 4u) << text;  // error, ok (invalid), rejected, ok
  EXPECT_EQ(json::parse(lines[0])["outcome"], "error");
  EXPECT_EQ(json::parse(lines[1])["outcome"], "ok");
  EXPECT_EQ(json::parse(lines[2])["outcome"], "rejected");
  EXPECT_EQ(json::parse(lines[3])["outcome"], "ok");
  EXPECT_EQ(json::parse(lines[3])["role"], "critic");
}

TEST(ExtractJsonTest, FindsTheObject) {
  EXPECT_EQ((*ExtractJson("{\"a\":1}"))["a"], 1);
  EXPECT_EQ((*ExtractJson("Sure! Here it is:\n{\"a\":2}\nthanks"))["a"], 2);
  EXPECT_EQ((*ExtractJson("```\n{\"a\":3}\n```"))["a"], 3);
  EXPECT_FALSE(ExtractJson("no object"));
  EXPECT_FALSE(ExtractJson("[1,2]"));
  EXPECT_FALSE(ExtractJson("{\"a\":"));
}

}  // namespace
}  // namespace hone::agent
