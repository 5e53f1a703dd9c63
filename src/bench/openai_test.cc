#include "bench/openai.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace hone::bench {
namespace {

using json = nlohmann::json;

TEST(RequestBodyTest, CompletionsWithTokenIds) {
  RequestSpec s;
  s.prompt_ids = {1001, 1002, 1003};
  s.max_tokens = 16;
  ServerProfile p;
  p.model_name = "m";
  json b = json::parse(BuildRequestBody(s, p));
  EXPECT_EQ(b["prompt"], json({1001, 1002, 1003}));
  EXPECT_EQ(b["max_tokens"], 16);
  EXPECT_EQ(b["model"], "m");
  EXPECT_EQ(b["stream"], true);
  EXPECT_EQ(b["stream_options"]["include_usage"], true);
  EXPECT_EQ(b["ignore_eos"], true);
  EXPECT_EQ(b["temperature"], 0);
  EXPECT_FALSE(b.contains("min_tokens"));
  EXPECT_FALSE(b.contains("messages"));
}

TEST(RequestBodyTest, ChatWithMinTokens) {
  RequestSpec s;
  s.endpoint = Endpoint::kChat;
  s.messages = {{"system", "sys"}, {"user", "hi"}};
  s.max_tokens = 8;
  ServerProfile p;
  p.send_min_tokens = true;
  json b = json::parse(BuildRequestBody(s, p));
  EXPECT_EQ(b["messages"][1]["content"], "hi");
  EXPECT_EQ(b["max_completion_tokens"], 8);
  EXPECT_EQ(b["min_tokens"], 8);
  EXPECT_FALSE(b.contains("model"));
}

// Drives a handler with a transcript delivered in pieces at given times.
struct Driver {
  RequestRecord done;
  bool called = false;
  StreamHandler handler;
  explicit Driver(int64_t osl_expected)
      : handler(Make(osl_expected), [this](StreamHandler& h) {
          done = h.record();
          called = true;
        }) {}
  static RequestRecord Make(int64_t osl) {
    RequestRecord r;
    r.t_start_ns = 1000;
    r.osl_expected = osl;
    return r;
  }
  void Run(int status, const std::vector<std::pair<std::string, int64_t>>& pieces,
           net::TransportError end = net::TransportError::kNone) {
    handler.OnHeaders(status, {}, 1100);
    for (const auto& [bytes, t] : pieces) handler.OnBody(bytes, t);
    handler.OnDone(end, end == net::TransportError::kNone ? "" : "x", 99999);
  }
};

// The shape llama-server streams for /v1/completions (recorded from v0.4.0).
TEST(StreamHandlerTest, LlamaCompletionsStream) {
  Driver d(3);
  d.Run(200, {{"data: {\"choices\":[{\"text\":\"a\",\"index\":0,\"finish_reason\":null}]}\n\n", 2000},
              {"data: {\"choices\":[{\"text\":\"b\",\"index\":0,\"finish_reason\":null}]}\n\ndata: {\"choi", 3000},
              {"ces\":[{\"text\":\"c\",\"index\":0,\"finish_reason\":\"length\"}],\"usage\":{\"completion_tokens\":3,"
               "\"prompt_tokens\":5,\"total_tokens\":8,\"prompt_tokens_details\":{\"cached_tokens\":2}},"
               "\"timings\":{\"cache_n\":2}}\n\n",
               4500},
              {"data: [DONE]\n\n", 4600}});
  ASSERT_TRUE(d.called);
  const RequestRecord& r = d.done;
  EXPECT_TRUE(r.ok()) << ErrorCategoryName(r.error) << " " << r.error_detail;
  EXPECT_EQ(r.t_first_ns, 2000);
  EXPECT_EQ(r.t_last_ns, 4500);
  EXPECT_EQ(r.t_end_ns, 99999);
  EXPECT_EQ(r.chunk_ns, (std::vector<int64_t>{2000, 3000, 4500}));
  EXPECT_EQ(r.osl, 3);
  EXPECT_EQ(r.isl, 5);
  EXPECT_EQ(r.cached_tokens, 2);
  EXPECT_EQ(r.count_source, CountSource::kUsage);
  EXPECT_FALSE(r.osl_mismatch);
  EXPECT_DOUBLE_EQ(r.ttft_s(), 1000e-9);
  EXPECT_DOUBLE_EQ(r.tpot_s(), (3500e-9 - 1000e-9) / 2);
}

TEST(StreamHandlerTest, ChatRoleOnlyChunkDoesNotStartTtftAndUsageChunkIsNotContent) {
  Driver d(2);
  d.Run(200, {{"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\n", 1500},
              {"data: {\"choices\":[{\"delta\":{\"content\":\"\"}}]}\n\n", 1600},
              {": ping\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n", 2000},
              {"data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hm\"}}]}\n\n", 2500},
              {"data: {\"choices\":[],\"usage\":{\"completion_tokens\":2,\"prompt_tokens\":9}}\n\ndata: [DONE]\n\n", 9000}});
  const RequestRecord& r = d.done;
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.t_first_ns, 2000);
  EXPECT_EQ(r.t_last_ns, 2500);  // the usage chunk is not a content chunk
  EXPECT_EQ(r.osl, 2);
  EXPECT_EQ(r.cached_tokens, -1);
}

TEST(StreamHandlerTest, MissingUsageFallsBackToChunksAndFlagsMismatch) {
  Driver d(4);
  d.Run(200, {{"data: {\"choices\":[{\"text\":\"x\"}]}\n\ndata: {\"choices\":[{\"text\":\"y\"}]}\n\ndata: [DONE]\n\n", 2000}});
  EXPECT_TRUE(d.done.ok());
  EXPECT_EQ(d.done.count_source, CountSource::kChunks);
  EXPECT_EQ(d.done.osl, 2);
  EXPECT_TRUE(d.done.osl_mismatch);
}

TEST(StreamHandlerTest, ErrorCategories) {
  {
    Driver d(1);
    d.Run(200, {{"data: {\"choices\":[{\"text\":\"x\"}]}\n\n", 2000}});  // no [DONE]
    EXPECT_EQ(d.done.error, ErrorCategory::kTruncated);
  }
  {
    Driver d(1);
    d.Run(200, {{"data: not json\n\ndata: [DONE]\n\n", 2000}});
    EXPECT_EQ(d.done.error, ErrorCategory::kMalformed);
  }
  {
    Driver d(1);
    d.Run(200, {{"data: {\"error\":{\"code\":500,\"message\":\"The model produced output that does not match\"}}\n\n"
                 "data: [DONE]\n\n",
                 2000}});
    EXPECT_EQ(d.done.error, ErrorCategory::kStreamError);
    EXPECT_NE(d.done.error_detail.find("does not match"), std::string::npos);
  }
  {
    Driver d(1);
    d.Run(429, {{"{\"error\":\"too many requests\"}", 2000}});
    EXPECT_EQ(d.done.error, ErrorCategory::kHttp429);
    EXPECT_EQ(d.done.http_status, 429);
  }
  {
    Driver d(1);
    d.Run(503, {{"Loading model", 2000}});
    EXPECT_EQ(d.done.error, ErrorCategory::kHttp503);
  }
  {
    Driver d(1);
    d.Run(400, {{"{\"error\":{\"message\":\"the request exceeds the available context size\"}}", 2000}});
    EXPECT_EQ(d.done.error, ErrorCategory::kContextOverflow);
  }
  {
    Driver d(1);
    d.Run(200, {{"data: {\"choices\":[{\"text\":\"x\"}]}\n\n", 2000}}, net::TransportError::kStalled);
    EXPECT_EQ(d.done.error, ErrorCategory::kStalled);
  }
  {
    Driver d(1);
    d.Run(0, {}, net::TransportError::kConnectRefused);
    EXPECT_EQ(d.done.error, ErrorCategory::kConnectionRefused);
  }
  {
    Driver d(3);
    d.Run(200, {{"data: [DONE]\n\n", 2000}});
    EXPECT_EQ(d.done.error, ErrorCategory::kNoContent);
  }
}

}  // namespace
}  // namespace hone::bench
