// The load generator against the real llama-server with a synthesized tiny model.
#include <gtest/gtest.h>

#include "bench/metrics.h"
#include "bench/replay.h"
#include "bench/runner.h"
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

}  // namespace
}  // namespace hone::bench
