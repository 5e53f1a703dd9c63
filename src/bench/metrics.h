// BenchResult: the metrics of one run, computed exactly as the anchors define them
// (shared/reference/serving-benchmarks.md):
//  - TTFT = first non-empty content chunk - send; E2EL = last content chunk - send;
//    TPOT = (E2EL - TTFT)/(OSL - 1) for OSL >= 2; ITL = the pooled gaps between
//    content chunks of all requests (vLLM/SGLang).
//  - Percentiles by linear interpolation; population standard deviation; seconds.
//  - Interactivity = 1 / percentile(TPOT) (the inverse of the latency percentile, so
//    "p90 interactivity" is 1/p90(TPOT) and keeps the slow tail); E2E-normalized
//    interactivity = 1 / percentile(E2EL/OSL) (AgentX's headline, P90).
//  - Throughput: token sums over the window; fixed workloads use first profiling
//    dispatch -> last completion (vLLM), agentic use max(t_last) - min(t_start).
//    Per GPU = divided by num_gpus. ISL includes cached prompt tokens.
//  - Goodput = requests meeting every per-request SLO / window.
//  - Achieved concurrency = sum(E2EL)/window; peak = sweep line over [start, end].
//  - Cache: theoretical (trace blocks), from usage.cached_tokens, and from the
//    server's counters (scraped deltas).
// Only successful profiling records count toward latency and throughput; every error
// is counted by category, and a run with too many errors is marked invalid.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/runner.h"
#include "core/stats.h"

namespace hone::bench {

struct SloSpec {
  double ttft_ms = 0;  // 0 = no limit
  double tpot_ms = 0;
  double e2el_ms = 0;
  bool any() const { return ttft_ms > 0 || tpot_ms > 0 || e2el_ms > 0; }
};

struct RunContext {  // echoed into the result
  std::string kind = "fixed";  // fixed | agentic
  std::string endpoint;
  std::string framework;
  std::string model;
  std::string load;            // LoadShape::ToString()
  int concurrency = 0;
  double request_rate = 0;     // 0 = inf
  int64_t isl = 0, osl = 0;
  double range_ratio = 0;
  std::string range_semantics;
  int num_prompts = 0, num_warmups = 0;
  uint64_t seed = 0;
  std::string trace;
  std::string token_sizing;    // agentic: "llama.cpp /tokenize", "tokens-per-word 1.3", ...
  int num_gpus = 1;
  std::string hardware;
  std::string precision;
  std::string tool_version;
  int64_t start_unix_us = 0;
  double max_error_rate = 0.10;
};

// The per-request latencies behind a result's summaries (seconds; successful
// profiling requests only): what a check pooled over several trials needs
// (PoolResults). ttft and e2el have one entry per request, tpot one per request with
// OSL >= 2, itl one per gap between content chunks.
struct LatencySamples {
  std::vector<double> ttft, tpot, itl, e2el;
};

struct BenchResult {
  RunContext context;
  bool valid = true;
  std::vector<std::string> invalid_reasons;
  // Accounting
  int total = 0, successful = 0, warmup = 0, failed = 0, osl_mismatches = 0;
  int cut = 0;  // cut at a measurement window's end: neither successful nor failed
  std::map<std::string, int> error_categories;
  std::map<std::string, int> warmup_error_categories;  // failed warm-up requests (not in `failed`)
  std::string count_source;  // usage | chunks | mixed
  // Window and throughput
  double duration_s = 0;
  int64_t total_input_tokens = 0, total_output_tokens = 0, total_expected_output_tokens = 0;
  // A cut window: the prompt tokens whose prefill (first token) fell inside it, as
  // measured (-1: not a window). total_input_tokens there is the steady-state credit.
  int64_t prefilled_input_tokens = -1;
  double prefilled_input_tps = -1;
  double input_tps = 0, output_tps = 0, total_tps = 0, request_rps = 0;
  double per_gpu_input_tps = 0, per_gpu_output_tps = 0, per_gpu_total_tps = 0;
  double goodput_rps = -1;  // -1 when no SLO was given
  double peak_output_tps = 0;
  double achieved_concurrency = 0;
  int peak_concurrency = 0;
  Summary qps;  // completions per 1 s window
  // Latency (seconds)
  Summary ttft, tpot, itl, e2el, client_queue, e2e_norm;
  LatencySamples samples;
  // Interactivity (tokens/s/user)
  std::map<std::string, double> intvty;           // "p50" -> 1/p50(TPOT) ...
  std::map<std::string, double> e2e_norm_intvty;  // "p90" -> 1/p90(E2EL/OSL) ...
  Summary isl_dist, osl_dist;
  // Input length against the plan (agentic: the trace's `in`), over successful
  // profiling requests whose ISL the server counted: |isl - planned| / planned.
  struct IslError {
    int n = 0;
    double mean_abs = 0, max_abs = 0, mean_signed = 0;  // fractions (0.01 = 1%)
  };
  std::optional<IslError> isl_error;
  // Cache
  std::optional<double> theoretical_hit_rate;
  std::optional<double> usage_cached_rate;
  std::optional<double> server_hit_rate;
  // Server (scraped)
  std::optional<double> server_prompt_tokens, server_generation_tokens;
  std::optional<double> kv_usage_max, queue_depth_mean, running_mean;
  int scrape_samples = 0;
};

BenchResult ComputeResult(const RunOutput& run, const RunContext& context, const SloSpec& slo,
                          const net::ServingMetricNames& names);

// One result over the requests of several: the latency summaries and interactivity
// recomputed from the pooled per-request samples, successful requests, tokens and
// windows summed, throughputs and goodput = sums / summed window (so goodput is the
// requests meeting every per-request SLO over all windows, per second). Context is
// the first's. Results without samples (read back from an older result.json) add
// their counts but no latencies.
BenchResult PoolResults(const std::vector<const BenchResult*>& results);

// Named values of a result: the objective metrics ("total_tps_per_gpu", "output_tps",
// "p90_intvty", "p99_ttft_ms" ...) and the server's scraped load (ServerMetricNames);
// nullopt for an unknown name or a value the run did not produce.
std::optional<double> Metric(const BenchResult& r, const std::string& name);
// The objective metrics Metric() understands (what a spec may optimize or bound).
std::vector<std::string> MetricNames();
// The server's load as scraped during the run ("kv_usage_max", "queue_depth_mean",
// "running_mean"): evidence for the search's diagnosis, not objectives.
std::vector<std::string> ServerMetricNames();

}  // namespace hone::bench
