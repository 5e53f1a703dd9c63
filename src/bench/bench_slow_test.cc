// The load generator against the real llama-server with a synthesized tiny model.
#include <gtest/gtest.h>

#include <cstdio>

#include "bench/metrics.h"
#include "bench/replay.h"
#include "bench/runner.h"
#include "bench/tokens.h"
#include "bench/tracegen.h"
#include "bench/workload.h"
#include "sys/files.h"
#include "target/llamacpp.h"
#include "target/server.h"
#include "testing/llama_env.h"
#include "testing/test_util.h"

namespace hone::bench {
namespace {

class BenchLlamaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HONE_REQUIRE_LLAMA();
    auto adapter = target::LlamaCppAdapter::Create(testing::SourceDir().string(), testing::Llama()->version);
    ASSERT_OK(adapter);
    adapter_ = std::move(*adapter);
    auto dir = sys::TempDir::Create("hone-bench-slow");
    ASSERT_TRUE(dir);
    dir_ = std::move(*dir);
    std::string model = testing::SynthModel("tiny", "q8_0");
    ASSERT_FALSE(model.empty());
    auto server = target::StartServer(*adapter_, Config{{"parallel", "4"}, {"ctx_size", "8192"}},
                                      {.server_binary = testing::Llama()->server, .model_path = model},
                                      {.log_path = (dir_->path() / "server.log").string()});
    ASSERT_OK(server);
    server_ = std::move(*server);
    options_.port = server_->port();
    options_.progress = false;
    options_.scrape_interval_s = 0.2;
    options_.profile.exact_length_fields = adapter_->ExactLengthFields();
    options_.profile.metrics = adapter_->metric_names();
  }
  std::unique_ptr<target::LlamaCppAdapter> adapter_;
  std::unique_ptr<sys::TempDir> dir_;
  std::unique_ptr<target::Server> server_;
  RunOptions options_;
};

TEST_F(BenchLlamaTest, FixedWorkloadHasExactLengthsAndServerCounters) {
  FixedWorkloadSpec w;
  w.isl = 48;
  w.osl = 12;
  w.num_prompts = 12;
  w.num_warmups = 2;
  options_.shape.concurrency = 3;
  ASSERT_OK_AND_ASSIGN(RunOutput out, RunRequests(GenerateFixed(w), options_));
  BenchResult r = ComputeResult(out, RunContext{.concurrency = 3}, {}, options_.profile.metrics);
  EXPECT_TRUE(r.valid) << (r.invalid_reasons.empty() ? "" : r.invalid_reasons[0]);
  EXPECT_EQ(r.successful, 12);
  EXPECT_EQ(r.osl_mismatches, 0);
  EXPECT_EQ(r.count_source, "usage");
  EXPECT_EQ(r.total_output_tokens, 12 * 12);
  EXPECT_EQ(r.isl_dist.min, 48);  // token-id prompts give exact input lengths
  EXPECT_EQ(r.isl_dist.max, 48);
  EXPECT_GT(r.output_tps, 0);
  EXPECT_GE(r.scrape_samples, 2);
  ASSERT_TRUE(r.server_generation_tokens.has_value());
  // The server's own counter saw at least the measured tokens (warm-ups add more).
  EXPECT_GE(*r.server_generation_tokens, 144);
}

TEST_F(BenchLlamaTest, ChatEndpointStreams) {
  FixedWorkloadSpec w;
  w.endpoint = Endpoint::kChat;
  w.isl = 40;
  w.osl = 8;
  w.num_prompts = 4;
  w.num_warmups = 0;
  options_.shape.concurrency = 2;
  ASSERT_OK_AND_ASSIGN(RunOutput out, RunRequests(GenerateFixed(w), options_));
  for (const auto& rec : out.records) {
    EXPECT_TRUE(rec.ok()) << ErrorCategoryName(rec.error) << " " << rec.error_detail;
    EXPECT_EQ(rec.osl, 8);
    EXPECT_GT(rec.isl, 20);
  }
}

TEST_F(BenchLlamaTest, AgenticReplayHitsThePrefixCache) {
  TraceGenOptions g = *TraceGenPreset("cpu");
  g.sessions = 4;
  g.turns_min = 3;
  g.turns_max = 4;
  g.system_tokens = 128;
  g.tool_tokens = 64;
  g.user_min = 32;
  g.user_max = 64;
  g.tool_result_min = 32;
  g.tool_result_max = 96;
  g.out_min = 4;
  g.out_max = 8;
  g.subagent_prob = 0.3;
  AgenticOptions ag;
  ag.concurrency = 2;
  ag.duration_s = 8;
  ag.think_scale = 0.05;
  options_.profile.metrics = adapter_->metric_names();
  ASSERT_OK_AND_ASSIGN(RunOutput out, RunAgentic(GenerateTraces(g), ag, options_));
  RunContext ctx;
  ctx.kind = "agentic";
  BenchResult r = ComputeResult(out, ctx, {}, options_.profile.metrics);
  EXPECT_TRUE(r.valid) << (r.invalid_reasons.empty() ? "" : r.invalid_reasons[0]);
  EXPECT_GT(r.successful, 4);
  ASSERT_TRUE(r.theoretical_hit_rate.has_value());
  EXPECT_GT(*r.theoretical_hit_rate, 0.3);
  // Turns share byte-identical prefixes, so the server reuses cached tokens.
  ASSERT_TRUE(r.usage_cached_rate.has_value());
  EXPECT_GT(*r.usage_cached_rate, 0.1);
}

// Token-exact replay: with a token plan from the server's own tokenizer, the server
// counts exactly the trace's input on both endpoints (the figures are printed for
// docs/reliability.md); sized by words, as before, it does not.
TEST_F(BenchLlamaTest, AgenticReplaySendsTheTracesInputLengths) {
  TraceGenOptions g = *TraceGenPreset("cpu");
  g.sessions = 3;
  g.turns_min = 3;
  g.turns_max = 4;
  g.system_tokens = 128;
  g.tool_tokens = 64;
  g.user_min = 32;
  g.user_max = 96;
  g.tool_result_min = 32;
  g.tool_result_max = 160;
  g.out_min = 4;
  g.out_max = 8;
  g.subagent_prob = 0.3;
  std::vector<Trace> traces = GenerateTraces(g);
  traces[0].items.back().request.in += 17;  // a partial block at the end
  CalibrationOptions co;
  co.port = server_->port();
  co.profile = options_.profile;
  co.profile.framework = "llama.cpp";
  co.cache_dir = dir_->path().string();
  ASSERT_OK_AND_ASSIGN(TokenPlan plan, CalibrateTokens(co));
  EXPECT_EQ(plan.source, "llama.cpp /tokenize");
  std::printf("token plan: %zu pool words, chat base %lld, user %lld, system %lld, assistant %lld, completions %lld\n",
              plan.words.size(), static_cast<long long>(plan.chat_base), static_cast<long long>(plan.chat_role["user"]),
              static_cast<long long>(plan.chat_role["system"]), static_cast<long long>(plan.chat_role["assistant"]),
              static_cast<long long>(plan.completion_base));
  options_.scrape_interval_s = 0;
  for (Endpoint endpoint : {Endpoint::kChat, Endpoint::kCompletions}) {
    for (const TokenPlan* tokens : std::vector<const TokenPlan*>{nullptr, &plan}) {
      AgenticOptions ag;
      ag.concurrency = 2;
      ag.duration_s = 30;
      ag.think_scale = 0.01;
      ag.max_plays = 3;
      ag.endpoint = endpoint;
      ag.tokens = tokens;
      ASSERT_OK_AND_ASSIGN(RunOutput out, RunAgentic(traces, ag, options_));
      BenchResult r = ComputeResult(out, RunContext{.kind = "agentic"}, {}, options_.profile.metrics);
      ASSERT_TRUE(r.isl_error.has_value());
      std::printf("ISL error, %s, %s: mean %+.2f%% (|mean| %.2f%%), max %.2f%% over %d requests\n",
                  endpoint == Endpoint::kChat ? "chat" : "completions", tokens ? "token plan" : "words (before)",
                  r.isl_error->mean_signed * 100, r.isl_error->mean_abs * 100, r.isl_error->max_abs * 100,
                  r.isl_error->n);
      EXPECT_GT(r.isl_error->n, 5);
      if (tokens) {
        EXPECT_LE(r.isl_error->max_abs, 0.01);
      } else {
        EXPECT_GT(r.isl_error->max_abs, 0.05);
      }
    }
  }
}

// A request that cannot fit its slot (prompt + forced output > the per-slot context
// from /props) is a context_overflow, never an output-length mismatch, and it ends
// its session, as in AgentX.
TEST_F(BenchLlamaTest, ARequestLargerThanTheSlotIsAContextOverflow) {
  ASSERT_OK_AND_ASSIGN(ServerLimits limits, ProbeServerLimits("127.0.0.1", server_->port(), {.framework = "llama.cpp"}));
  ASSERT_EQ(limits.slot_context, 2048);  // -c 8192 -np 4
  Trace t;
  t.id = "overflow";
  auto request = [](double at, int64_t blocks, int64_t out, int64_t first_id) {
    TraceItem item;
    item.request.t = at;
    item.request.in = blocks * 64;
    item.request.out = out;
    for (int64_t b = 0; b < blocks; ++b) item.request.hash_ids.push_back(first_id + b);
    item.request.api_time = 0.1;
    return item;
  };
  t.items = {request(0, 4, 4, 1), request(1, 31, 100, 1), request(2, 33, 4, 1)};  // 1984 + 100 > 2048
  CalibrationOptions co;
  co.port = server_->port();
  co.profile.framework = "llama.cpp";
  ASSERT_OK_AND_ASSIGN(TokenPlan plan, CalibrateTokens(co));
  AgenticOptions ag;
  ag.concurrency = 1;
  ag.duration_s = 30;
  ag.think_scale = 0.01;
  ag.max_plays = 1;
  ag.lane_warmup = false;
  ag.tokens = &plan;
  options_.scrape_interval_s = 0;
  options_.slot_context = limits.slot_context;
  ASSERT_OK_AND_ASSIGN(RunOutput out, RunAgentic({t}, ag, options_));
  int overflows = 0;
  for (const auto& rec : out.records) {
    if (rec.phase == Phase::kWarmup) continue;
    if (rec.turn == 0) {
      EXPECT_TRUE(rec.ok()) << rec.error_detail;
    }
    if (rec.turn == 1) {
      EXPECT_EQ(rec.error, ErrorCategory::kContextOverflow) << ErrorCategoryName(rec.error) << " " << rec.error_detail;
      EXPECT_FALSE(rec.osl_mismatch);
      overflows += rec.error == ErrorCategory::kContextOverflow;
      std::printf("context overflow: %s (osl %lld of %lld)\n", rec.error_detail.c_str(), static_cast<long long>(rec.osl),
                  static_cast<long long>(rec.osl_expected));
    }
    EXPECT_NE(rec.turn, 2) << "the session goes on after its context overflowed";
  }
  EXPECT_EQ(overflows, 1);
}

}  // namespace
}  // namespace hone::bench
