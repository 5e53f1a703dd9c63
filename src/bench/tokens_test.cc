#include "bench/tokens.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>

#include "bench/metrics.h"
#include "bench/replay.h"
#include "bench/trace.h"
#include "net/raw_server.h"
#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::bench {
namespace {

using json = nlohmann::json;

// A toy tokenizer: a word of up to four letters is one token, a longer one two, a
// newline one. Its chat template adds 2 tokens per request and 5/3/4 per system,
// user and assistant message; completions add a BOS.
int64_t ToyCount(const std::string& text) {
  int64_t n = 0;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) n += word.size() <= 4 ? 1 : 2;
    word.clear();
  };
  for (char c : text) {
    if (c == ' ') {
      flush();
    } else if (c == '\n') {
      flush();
      ++n;
    } else {
      word += c;
    }
  }
  flush();
  return n;
}

int64_t ToyChat(const json& messages) {
  int64_t n = 2;
  for (const auto& m : messages) {
    std::string role = m["role"];
    n += role == "system" ? 5 : role == "user" ? 3 : 4;
    n += ToyCount(m["content"]);
  }
  return n;
}

// The toy server: /tokenize (llama.cpp's shape), /props, and the two OpenAI
// endpoints answering usage (streamed when asked).
class ToyServer {
 public:
  explicit ToyServer(bool tokenize = true) {
    auto s = net::RawServer::Start([this, tokenize](const net::RawRequest& req, net::RawWriter& w) {
      auto reply = [&](int status, const std::string& body) {
        w.Write("HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: " + std::to_string(body.size()) +
                "\r\nContent-Type: application/json\r\n\r\n" + body);
      };
      if (req.path == "/props") return reply(200, R"({"model_path":"toy.gguf","chat_template":"toy",
        "default_generation_settings":{"n_ctx":512}})");
      json body = json::parse(req.body, nullptr, false);
      if (req.path == "/tokenize") {
        if (!tokenize) return reply(404, "{}");
        ++tokenize_calls;
        json tokens = json::array();
        for (int64_t i = 0; i < ToyCount(body["content"]); ++i) tokens.push_back(7);
        return reply(200, json{{"tokens", tokens}}.dump());
      }
      int64_t prompt = req.path == "/v1/completions" ? 1 + ToyCount(body["prompt"]) : ToyChat(body["messages"]);
      int64_t out = body.value("max_tokens", 1);
      if (!body.value("stream", false)) {
        return reply(200, json{{"usage", {{"prompt_tokens", prompt}, {"completion_tokens", out}}}}.dump());
      }
      w.Write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
      for (int64_t k = 0; k < out; ++k) w.WriteChunk("data: {\"choices\":[{\"text\":\"x\"}]}\n\n");
      w.WriteChunk("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":" + std::to_string(prompt) +
                   ",\"completion_tokens\":" + std::to_string(out) + "}}\n\ndata: [DONE]\n\n");
      w.EndChunks();
    });
    EXPECT_TRUE(s);
    server = std::move(*s);
  }
  std::unique_ptr<net::RawServer> server;
  std::atomic<int> tokenize_calls{0};
};

CalibrationOptions Options(int port, std::string framework = "llama.cpp") {
  CalibrationOptions o;
  o.port = port;
  o.profile.framework = std::move(framework);
  return o;
}

TEST(TokensTest, PoolTextIsExactlyTheAskedWords) {
  TokenPlan p;
  p.words = {"a", "bb", "cc"};
  std::string t = PoolText(p, 7, 50);
  EXPECT_EQ(std::count(t.begin(), t.end(), ' '), 50);
  EXPECT_EQ(t, PoolText(p, 7, 50));
  EXPECT_NE(t, PoolText(p, 8, 50));
  EXPECT_EQ(PoolText(p, 7, 0), "");
  p.chat_base = 2;
  p.chat_role = {{"user", 3}, {"system", 5}};
  EXPECT_EQ(ChatOverhead(p, {"system", "user", "assistant"}), 2 + 5 + 3 + 3);  // unknown role: as a user's
}

TEST(TokensTest, CalibratesWithTheServersTokenizerAndCachesThePlan) {
  ToyServer toy;
  ASSERT_OK_AND_ASSIGN(auto dir, sys::TempDir::Create("hone-tokens"));
  CalibrationOptions o = Options(toy.server->port());
  o.cache_dir = dir->path().string();
  ASSERT_OK_AND_ASSIGN(TokenPlan plan, CalibrateTokens(o));
  EXPECT_EQ(plan.source, "llama.cpp /tokenize");
  ASSERT_TRUE(plan.usable());
  for (const std::string& w : plan.words) EXPECT_LE(w.size(), 4u) << w;
  EXPECT_EQ(plan.chat_base, 2);
  EXPECT_EQ(plan.chat_role["user"], 3);
  EXPECT_EQ(plan.chat_role["system"], 5);
  EXPECT_EQ(plan.chat_role["assistant"], 4);
  EXPECT_EQ(plan.completion_base, 1);
  // The second session on the same server and model reads the plan back.
  int calls = toy.tokenize_calls;
  ASSERT_OK_AND_ASSIGN(TokenPlan again, CalibrateTokens(o));
  EXPECT_EQ(toy.tokenize_calls, calls);
  EXPECT_EQ(again.words, plan.words);
  EXPECT_EQ(TokenPlanToJson(again), TokenPlanToJson(plan));
}

TEST(TokensTest, WithoutATokenizerEndpointTheVocabularyDecides) {
  ToyServer toy(/*tokenize=*/false);
  CalibrationOptions o = Options(toy.server->port());
  o.vocab_model = "llama";
  for (const char* w : {"the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
                        "on", "not", "he", "this", "are", "or"}) {
    o.vocab_pieces.push_back(std::string("\xE2\x96\x81") + w);
  }
  o.vocab_pieces.push_back("model");  // no leading-space marker: not a word start
  ASSERT_OK_AND_ASSIGN(TokenPlan plan, CalibrateTokens(o));
  EXPECT_EQ(plan.source, "GGUF vocabulary (llama)");
  EXPECT_EQ(plan.words.size(), 20u);
  EXPECT_EQ(plan.completion_base, 1);
  // Neither a tokenizer nor a vocabulary: an error, never a guess.
  o.vocab_pieces.clear();
  EXPECT_FALSE(CalibrateTokens(o));
}

constexpr const char* kTrace = R"({"id":"t1","block_size":64,"tool_tokens":64,"system_tokens":64,"requests":[
 {"t":0,"type":"s","in":256,"out":10,"hash_ids":[1,2,3,4],"api_time":1.0},
 {"t":3,"type":"s","in":384,"out":10,"hash_ids":[1,2,3,4,5,6],"api_time":1.0},
 {"type":"subagent","t":4.5,"agent_id":"a","requests":[
   {"t":4.6,"in":192,"out":5,"hash_ids":[1,2,9],"api_time":0.5},
   {"t":5.2,"in":290,"out":5,"hash_ids":[1,2,9,10],"api_time":0.5}]},
 {"t":7,"type":"s","in":530,"out":10,"hash_ids":[1,2,3,4,5,6,7,8],"api_time":1.0},
 {"t":9,"type":"s","in":70,"out":10,"hash_ids":[1],"api_time":1.0}
]})";

TEST(TokensTest, PayloadsCarryExactlyTheTracesInputOnBothEndpoints) {
  ToyServer toy;
  ASSERT_OK_AND_ASSIGN(TokenPlan plan, CalibrateTokens(Options(toy.server->port())));
  ASSERT_OK_AND_ASSIGN(auto dir, sys::TempDir::Create("hone-tokens"));
  std::string path = (dir->path() / "t.json").string();
  ASSERT_OK(sys::WriteFileAtomic(path, kTrace));
  ASSERT_OK_AND_ASSIGN(auto traces, LoadTraces(path));
  ReplaySession s = BuildSession(traces[0]);
  PayloadBuilder chat(s, 42, &plan, 1.3, Endpoint::kChat);
  PayloadBuilder completions(s, 42, &plan, 1.3, Endpoint::kCompletions);
  std::vector<std::vector<Message>> turns;
  for (const ReplayNode& n : s.nodes) {
    RequestSpec c = chat.BuildRequest(n);
    json messages = json::array();
    for (const Message& m : c.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
    EXPECT_EQ(ToyChat(messages), n.isl) << "node " << n.id;
    EXPECT_EQ(chat.planned_tokens(), n.isl);
    if (n.stream == 0) turns.push_back(c.messages);
    RequestSpec p = completions.BuildRequest(n);
    EXPECT_EQ(1 + ToyCount(p.prompt_text), n.isl) << "node " << n.id;
  }
  // The shared prefix stays byte-identical: turn 1 repeats turn 0's system message
  // and its first user message's blocks (the template's tokens came off the end).
  ASSERT_GE(turns.size(), 2u);
  EXPECT_EQ(turns[1][0].content, turns[0][0].content);
  EXPECT_TRUE(turns[1][1].content.starts_with(turns[0][1].content));
  EXPECT_TRUE(turns[0][1].content.starts_with(chat.marker()));
}

TEST(TokensTest, ReplayRecordsItsInputLengthError) {
  ToyServer toy;
  ASSERT_OK_AND_ASSIGN(TokenPlan plan, CalibrateTokens(Options(toy.server->port())));
  ASSERT_OK_AND_ASSIGN(auto dir, sys::TempDir::Create("hone-tokens"));
  std::string path = (dir->path() / "t.json").string();
  ASSERT_OK(sys::WriteFileAtomic(path, kTrace));
  ASSERT_OK_AND_ASSIGN(auto traces, LoadTraces(path));
  RunOptions o;
  o.port = toy.server->port();
  o.progress = false;
  o.scrape_interval_s = 0;
  for (Endpoint endpoint : {Endpoint::kChat, Endpoint::kCompletions}) {
    for (const TokenPlan* tokens : std::vector<const TokenPlan*>{nullptr, &plan}) {
      AgenticOptions ag;
      ag.concurrency = 1;
      ag.duration_s = 30;
      ag.think_scale = 0.001;
      ag.max_plays = 1;
      ag.lane_warmup = false;
      ag.endpoint = endpoint;
      ag.tokens = tokens;
      ASSERT_OK_AND_ASSIGN(RunOutput out, RunAgentic(traces, ag, o));
      BenchResult r = ComputeResult(out, {}, {}, {});
      ASSERT_TRUE(r.isl_error);
      EXPECT_EQ(r.isl_error->n, 6);
      if (tokens) {
        EXPECT_EQ(r.isl_error->max_abs, 0.0);
      } else {
        EXPECT_GT(r.isl_error->max_abs, 0.01);  // words of two tokens and the template's tokens
      }
    }
  }
}

TEST(TokensTest, AskingMoreThanTheSlotHoldsIsAContextOverflow) {
  ToyServer toy;
  ASSERT_OK_AND_ASSIGN(ServerLimits limits, ProbeServerLimits("127.0.0.1", toy.server->port(), {.framework = "llama.cpp"}));
  EXPECT_EQ(limits.slot_context, 512);
  // The server stops at the end of its context: 3 tokens of the 10 asked.
  RequestRecord rec;
  rec.isl_expected = 510;
  rec.osl_expected = 10;
  StreamHandler h(rec, nullptr, limits.slot_context);
  h.OnHeaders(200, {}, 0);
  h.OnBody("data: {\"choices\":[{\"text\":\"x\"}]}\n\ndata: {\"choices\":[{\"text\":\"x\"}]}\n\n"
           "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":510,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n",
           1);
  h.OnDone(net::TransportError::kNone, "", 2);
  EXPECT_EQ(h.record().error, ErrorCategory::kContextOverflow);
  EXPECT_FALSE(h.record().osl_mismatch);
  // Within the slot, a short answer stays an output-length mismatch.
  rec.isl_expected = 100;
  StreamHandler fits(rec, nullptr, limits.slot_context);
  fits.OnHeaders(200, {}, 0);
  fits.OnBody("data: {\"choices\":[{\"text\":\"x\"}]}\n\n"
              "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n",
              1);
  fits.OnDone(net::TransportError::kNone, "", 2);
  EXPECT_TRUE(fits.record().ok());
  EXPECT_TRUE(fits.record().osl_mismatch);
}

}  // namespace
}  // namespace hone::bench
