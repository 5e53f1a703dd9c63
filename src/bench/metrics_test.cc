#include "bench/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "bench/result_io.h"

namespace hone::bench {
namespace {

constexpr int64_t kMs = 1'000'000;

RequestRecord Rec(int64_t start_ms, std::vector<int64_t> chunks_ms, int64_t end_ms, int64_t isl, int64_t cached) {
  RequestRecord r;
  r.t_start_ns = start_ms * kMs;
  for (int64_t c : chunks_ms) r.chunk_ns.push_back(c * kMs);
  r.t_first_ns = r.chunk_ns.front();
  r.t_last_ns = r.chunk_ns.back();
  r.t_end_ns = end_ms * kMs;
  r.osl = static_cast<int64_t>(chunks_ms.size());
  r.osl_expected = r.osl;
  r.isl = isl;
  r.cached_tokens = cached;
  r.count_source = CountSource::kUsage;
  return r;
}

RunOutput Sample() {
  RunOutput run;
  RequestRecord warm = Rec(0, {5}, 6, 99, 0);
  warm.phase = Phase::kWarmup;
  run.records.push_back(warm);
  run.records.push_back(Rec(0, {100, 200, 300}, 310, 10, 5));
  run.records.push_back(Rec(50, {250, 350, 450, 550}, 560, 20, -1));
  run.records.push_back(Rec(100, {200, 600}, 610, 30, 0));
  RequestRecord bad;
  bad.t_start_ns = 120 * kMs;
  bad.t_end_ns = 130 * kMs;
  bad.error = ErrorCategory::kHttp503;
  run.records.push_back(bad);
  run.window_start_ns = 0;
  run.window_end_ns = 610 * kMs;
  return run;
}

TEST(MetricsTest, ExactValuesOnAHandBuiltRun) {
  RunContext ctx;
  ctx.num_gpus = 2;
  ctx.concurrency = 3;
  BenchResult r = ComputeResult(Sample(), ctx, SloSpec{.ttft_ms = 150}, {});
  EXPECT_EQ(r.total, 4);
  EXPECT_EQ(r.successful, 3);
  EXPECT_EQ(r.failed, 1);
  EXPECT_EQ(r.warmup, 1);
  EXPECT_EQ(r.error_categories.at("http_503"), 1);
  EXPECT_NEAR(r.duration_s, 0.61, 1e-12);
  EXPECT_EQ(r.total_input_tokens, 60);
  EXPECT_EQ(r.total_output_tokens, 9);
  EXPECT_NEAR(r.input_tps, 60 / 0.61, 1e-9);
  EXPECT_NEAR(r.output_tps, 9 / 0.61, 1e-9);
  EXPECT_NEAR(r.per_gpu_total_tps, 69 / 0.61 / 2, 1e-9);
  EXPECT_NEAR(r.request_rps, 3 / 0.61, 1e-9);
  // TTFT [.1 .2 .1]; TPOT [.1 .1 .4]; E2EL [.3 .5 .5]; ITL pooled [.1 x5, .4].
  EXPECT_NEAR(r.ttft.mean, 0.4 / 3, 1e-12);
  EXPECT_NEAR(r.ttft.p90, 0.18, 1e-12);
  EXPECT_NEAR(r.tpot.p50, 0.1, 1e-12);
  EXPECT_NEAR(r.tpot.p90, 0.34, 1e-12);
  EXPECT_NEAR(r.e2el.mean, 1.3 / 3, 1e-12);
  EXPECT_EQ(r.itl.n, 6u);
  EXPECT_NEAR(r.itl.mean, 0.15, 1e-12);
  EXPECT_NEAR(r.itl.p50, 0.1, 1e-12);
  // Interactivity is the inverse of the latency percentile.
  EXPECT_NEAR(r.intvty.at("p90"), 1 / 0.34, 1e-9);
  EXPECT_NEAR(r.e2e_norm_intvty.at("p90"), 1 / 0.225, 1e-9);  // E2EL/OSL [.1 .125 .25]
  EXPECT_NEAR(r.achieved_concurrency, 1.3 / 0.61, 1e-9);
  EXPECT_EQ(r.peak_concurrency, 3);
  EXPECT_NEAR(r.goodput_rps, 2 / 0.61, 1e-9);  // TTFT <= 150 ms: requests 1 and 3
  EXPECT_NEAR(*r.usage_cached_rate, 5.0 / 40.0, 1e-12);  // unknown cached counts are left out
  // 1 of 4 failed is above the 10% default: a run with too many errors is not a result.
  EXPECT_FALSE(r.valid);
  ASSERT_EQ(r.invalid_reasons.size(), 1u);
  EXPECT_EQ(r.invalid_reasons[0], "1 of 4 requests failed (limit 10%)");
  EXPECT_NEAR(*Metric(r, "p90_intvty"), 1 / 0.34, 1e-9);
  EXPECT_NEAR(*Metric(r, "p99_ttft_ms"), Percentile(std::vector<double>{100, 200, 100}, 99), 1e-9);
  EXPECT_FALSE(Metric(r, "nonsense"));
}

// A window shorter than a request's life: 4 requests of ISL 1000 / OSL 10 that all
// prefilled before it (a synchronized wave, one token per 100 ms). Counting prompts at
// their prefill gives the window no input at all; the steady-state credit gives each
// request's prompt per output token streamed inside (1000 / 10 = 100 per token).
TEST(MetricsTest, TheServersScrapedLoadIsNamedButIsNoObjective) {
  // The session's diagnosis reads a full KV cache and a queue through Metric(); a live
  // session once saw neither (only the surface recorder read the fields), so a server
  // with 4 slots under 16 requests in flight was diagnosed "overhead", not "queueing".
  BenchResult r;
  EXPECT_FALSE(Metric(r, "queue_depth_mean"));  // not scraped: no value, not 0
  r.kv_usage_max = 0.95;
  r.queue_depth_mean = 10.5;
  r.running_mean = 3.6;
  EXPECT_DOUBLE_EQ(*Metric(r, "kv_usage_max"), 0.95);
  EXPECT_DOUBLE_EQ(*Metric(r, "queue_depth_mean"), 10.5);
  EXPECT_DOUBLE_EQ(*Metric(r, "running_mean"), 3.6);
  for (const std::string& name : ServerMetricNames()) {
    EXPECT_TRUE(Metric(r, name)) << name;
    // Evidence, not something a spec may optimize: the objective names leave them out.
    const std::vector<std::string> objectives = MetricNames();
    EXPECT_EQ(std::find(objectives.begin(), objectives.end(), name), objectives.end()) << name;
  }
}

TEST(MetricsTest, AWindowCreditsPromptsAsTheirOutputsStream) {
  RunOutput run;
  for (int k = 0; k < 4; ++k) {
    RequestRecord r = Rec(0, {100, 200, 300, 400, 500, 600}, 0, 1000, -1);
    r.isl_expected = 1000;
    r.osl_expected = 10;
    r.cut = true;
    r.error = ErrorCategory::kCancelled;
    if (k == 3) {  // a staggered first-wave request asked for 6 of the workload's 10 tokens
      r.osl_expected = 6;
      r.osl_nominal = 10;
    }
    run.records.push_back(r);
  }
  RequestRecord late = Rec(450, {520, 580}, 0, 1000, -1);  // prefilled inside, 2 tokens inside
  late.osl_expected = 10;
  late.cut = true;
  late.error = ErrorCategory::kCancelled;
  run.records.push_back(late);
  run.windowed = true;
  run.window_start_ns = 250 * kMs;
  run.window_end_ns = 550 * kMs;
  BenchResult r = ComputeResult(run, RunContext{}, {}, {});
  EXPECT_EQ(r.total_output_tokens, 4 * 3 + 1);   // 300, 400, 500 from each; 520 from the late one
  EXPECT_EQ(r.prefilled_input_tokens, 1000);     // only the late one's prefill fell inside
  EXPECT_EQ(r.total_input_tokens, 13 * 100);     // 100 per output token, the staggered one at its nominal OSL
  EXPECT_NEAR(r.input_tps, 1300 / 0.3, 1e-6);
  EXPECT_NEAR(r.prefilled_input_tps, 1000 / 0.3, 1e-6);
  EXPECT_NEAR(r.total_tps, 1313 / 0.3, 1e-6);
  BenchResult back = ResultFromJson(ResultToJson(r)).value();
  EXPECT_NEAR(back.prefilled_input_tps, r.prefilled_input_tps, 1e-3);
  EXPECT_EQ(ComputeResult(Sample(), RunContext{}, {}, {}).prefilled_input_tokens, -1) << "not a window";
}

// A server that stalls after its first requests: one finished during the ramp, the
// others were cut at the window's end without a token inside it. Throughput 0 is not a
// measurement; the run is invalid, as one where nothing finished at all.
TEST(MetricsTest, AWindowWithoutATokenIsInvalidWhateverFinishedBeforeIt) {
  RunOutput run;
  run.records.push_back(Rec(0, {100, 200}, 210, 512, -1));  // done before the window
  for (int k = 0; k < 3; ++k) {
    RequestRecord stuck = Rec(100, {150}, 0, 512, -1);  // its first token came before the window
    stuck.osl_expected = 128;
    stuck.cut = true;
    stuck.error = ErrorCategory::kCancelled;
    run.records.push_back(stuck);
  }
  run.windowed = true;
  run.window_start_ns = 300 * kMs;
  run.window_end_ns = 900 * kMs;
  BenchResult r = ComputeResult(run, RunContext{}, {}, {});
  EXPECT_EQ(r.successful, 1);
  EXPECT_EQ(r.cut, 3);
  EXPECT_EQ(r.total_output_tokens, 0);
  EXPECT_FALSE(r.valid);
  ASSERT_EQ(r.invalid_reasons.size(), 1u);
  EXPECT_EQ(r.invalid_reasons[0], "no token arrived inside the measurement window");
  // One token inside the window is a (slow) measurement.
  run.records[1].chunk_ns.push_back(400 * kMs);
  EXPECT_TRUE(ComputeResult(run, RunContext{}, {}, {}).valid);
}

// A staggered first-wave request ended early by design: its TTFT and TPOT count, its
// end-to-end latency (shorter than any workload request's) does not.
TEST(MetricsTest, AShortenedFirstWaveRequestStaysOutOfE2el) {
  RunOutput run = Sample();
  run.records[1].osl_nominal = 30;  // asked for 3 of the workload's 30 tokens
  BenchResult r = ComputeResult(run, RunContext{}, SloSpec{.e2el_ms = 1}, {});
  EXPECT_EQ(r.successful, 3);
  EXPECT_EQ(r.ttft.n, 3u);
  EXPECT_EQ(r.e2el.n, 2u);
  EXPECT_EQ(r.samples.e2el.size(), 2u);
  EXPECT_EQ(r.e2e_norm.n, 2u);
  EXPECT_NEAR(r.goodput_rps, 1 / 0.61, 1e-9) << "its E2EL is not judged; the others miss a 1 ms SLO";
}

TEST(MetricsTest, GoodputCountsRequestsMeetingEveryPerRequestSlo) {
  // TTFT [.1 .2 .1], TPOT [.1 .1 .4]: request 1 meets both, 2 misses TTFT, 3 misses TPOT.
  BenchResult r = ComputeResult(Sample(), RunContext{}, SloSpec{.ttft_ms = 150, .tpot_ms = 200}, {});
  EXPECT_NEAR(r.goodput_rps, 1 / 0.61, 1e-9);
  EXPECT_NEAR(*Metric(r, "goodput_rps"), 1 / 0.61, 1e-9);
  BenchResult none = ComputeResult(Sample(), RunContext{}, {}, {});
  EXPECT_FALSE(Metric(none, "goodput_rps"));  // no per-request SLO: no goodput
}

TEST(MetricsTest, PoolResultsRecomputesPercentilesOverAllRequests) {
  BenchResult a = ComputeResult(Sample(), RunContext{}, SloSpec{.ttft_ms = 150}, {});
  BenchResult b = a;
  // One trial's ITL [.1 x5, .4]: p90 = .25 s; two pooled, [.1 x10, .4 x2]: p90 = .37 s.
  EXPECT_NEAR(*Metric(a, "p90_itl_ms"), 250, 1e-9);
  BenchResult p = PoolResults({&a, &b});
  EXPECT_EQ(p.successful, 6);
  EXPECT_EQ(p.itl.n, 12u);
  EXPECT_NEAR(*Metric(p, "p90_itl_ms"), 370, 1e-9);
  EXPECT_NEAR(*Metric(p, "p95_tpot_ms"), Percentile(std::vector<double>{100, 100, 400, 100, 100, 400}, 95), 1e-9);
  EXPECT_NEAR(p.goodput_rps, 4 / 1.22, 1e-9);  // 2 good requests per trial over two 0.61 s windows
  EXPECT_NEAR(p.request_rps, 6 / 1.22, 1e-9);
}

TEST(MetricsTest, AgenticWindowAndTheoreticalHits) {
  RunOutput run = Sample();
  run.records.pop_back();  // drop the error
  run.records[1].hit_blocks = 2;
  run.records[1].total_blocks = 4;
  run.records[2].total_blocks = 4;
  RunContext ctx;
  ctx.kind = "agentic";
  BenchResult r = ComputeResult(run, ctx, {}, {});
  // max(t_last) - min(t_start) = 600 - 0 ms.
  EXPECT_NEAR(r.duration_s, 0.6, 1e-12);
  EXPECT_NEAR(*r.theoretical_hit_rate, 2.0 / 8.0, 1e-12);
  EXPECT_TRUE(r.valid);
  EXPECT_EQ(r.goodput_rps, -1);
}

TEST(MetricsTest, ServerCountersAreDeltas) {
  RunOutput run = Sample();
  run.records.pop_back();
  run.series.samples.push_back({0, {{"vllm:prefix_cache_queries_total", 100}, {"vllm:prefix_cache_hits_total", 10},
                                    {"vllm:num_requests_waiting", 2}}});
  run.series.samples.push_back({kMs, {{"vllm:prefix_cache_queries_total", 300}, {"vllm:prefix_cache_hits_total", 60},
                                      {"vllm:num_requests_waiting", 4}}});
  net::ServingMetricNames names;
  names.cache_queries_total = "vllm:prefix_cache_queries_total";
  names.cache_hits_total = "vllm:prefix_cache_hits_total";
  names.requests_waiting = "vllm:num_requests_waiting";
  BenchResult r = ComputeResult(run, RunContext{}, {}, names);
  EXPECT_NEAR(*r.server_hit_rate, 50.0 / 200.0, 1e-12);
  EXPECT_NEAR(*r.queue_depth_mean, 3.0, 1e-12);
  EXPECT_EQ(r.scrape_samples, 2);
}

TEST(MetricsTest, JsonRoundTripKeepsTheNumbers) {
  RunContext ctx;
  ctx.concurrency = 3;
  ctx.load = "closed loop, concurrency 3";
  BenchResult r = ComputeResult(Sample(), ctx, SloSpec{.ttft_ms = 150}, {});
  std::string text = ResultToJson(r);
  auto back = ResultFromJson(text);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(back->successful, 3);
  EXPECT_EQ(back->valid, false);
  EXPECT_NEAR(back->total_tps, r.total_tps, 1e-4);
  EXPECT_NEAR(back->tpot.p90, r.tpot.p90, 1e-4);
  EXPECT_NEAR(back->intvty.at("p90"), r.intvty.at("p90"), 1e-4);
  EXPECT_EQ(back->error_categories.at("http_503"), 1);
  // The compat section carries the anchors' key names.
  EXPECT_NE(text.find("\"p99_ttft_ms\""), std::string::npos);
  EXPECT_NE(text.find("\"total_token_throughput\""), std::string::npos);
  EXPECT_NE(text.find("\"tput_per_gpu\""), std::string::npos);
  EXPECT_NE(text.find("\"e2e_norm_intvty\""), std::string::npos);
  EXPECT_FALSE(ResultFromJson("{\"schema\":\"other\"}"));
  EXPECT_NE(FormatTable(r).find("INVALID RUN"), std::string::npos);
}

}  // namespace
}  // namespace hone::bench
