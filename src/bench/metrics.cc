#include "bench/metrics.h"

#include <algorithm>
#include <cmath>

namespace hone::bench {

namespace {

std::map<std::string, double> InversePercentiles(const std::vector<double>& xs) {
  std::map<std::string, double> out;
  if (xs.empty()) return out;
  for (auto [name, p] : {std::pair{"p50", 50.0}, {"p75", 75.0}, {"p90", 90.0}, {"p95", 95.0}, {"p99", 99.0}}) {
    double v = Percentile(xs, p);
    out[name] = v > 0 ? 1.0 / v : 0.0;
  }
  double m = Mean(xs);
  out["mean"] = m > 0 ? 1.0 / m : 0.0;
  return out;
}

}  // namespace

BenchResult ComputeResult(const RunOutput& run, const RunContext& context, const SloSpec& slo,
                          const net::ServingMetricNames& names) {
  BenchResult r;
  r.context = context;
  r.invalid_reasons = run.invalid_reasons;
  std::vector<const RequestRecord*> ok;
  bool any_usage = false, any_chunks = false;
  for (const RequestRecord& rec : run.records) {
    if (rec.phase == Phase::kWarmup) {
      ++r.warmup;
      if (!rec.ok()) ++r.warmup_error_categories[std::string(ErrorCategoryName(rec.error))];
      continue;
    }
    if (rec.cut) {
      ++r.cut;
      continue;
    }
    ++r.total;
    if (!rec.ok()) {
      ++r.failed;
      ++r.error_categories[std::string(ErrorCategoryName(rec.error))];
      continue;
    }
    ++r.successful;
    if (rec.osl_mismatch) ++r.osl_mismatches;
    (rec.count_source == CountSource::kUsage ? any_usage : any_chunks) = true;
    ok.push_back(&rec);
  }
  r.count_source = any_usage && any_chunks ? "mixed" : any_chunks ? "chunks" : "usage";

  // Window.
  int64_t w0 = INT64_MAX, w1 = 0;
  if (context.kind == "agentic") {
    for (const auto* rec : ok) {
      w0 = std::min(w0, rec->t_start_ns);
      w1 = std::max(w1, rec->t_last_ns);
    }
  } else {
    w0 = run.window_start_ns;
    w1 = run.window_end_ns;
  }
  r.duration_s = (w1 > w0 && w0 != INT64_MAX) ? static_cast<double>(w1 - w0) * 1e-9 : 0.0;

  std::vector<double> ttft, tpot, itl, e2el, queue, e2e_norm, isl, osl;
  int64_t cached = 0, cached_known_isl = 0, hit_blocks = 0, total_blocks = 0;
  double sum_e2el = 0;
  int good = 0;
  std::vector<std::pair<int64_t, int>> events;  // sweep line for peak concurrency
  std::map<int64_t, int> completions_per_s;
  std::map<int64_t, int64_t> tokens_per_s;
  for (const auto* rec : ok) {
    r.total_input_tokens += rec->isl;
    r.total_output_tokens += rec->osl;
    r.total_expected_output_tokens += rec->osl_expected;
    ttft.push_back(rec->ttft_s());
    // A staggered first-wave request (RunOptions::ramp_s) asked for fewer tokens than the
    // workload's: its end-to-end latency is not the workload's, so it stays out of E2EL
    // and the E2EL SLO (its TTFT, TPOT and ITL are real).
    const bool shortened = rec->osl_nominal > 0 && rec->osl_nominal != rec->osl_expected;
    if (!shortened) e2el.push_back(rec->e2el_s());
    sum_e2el += rec->e2el_s();
    if (rec->osl >= 2) tpot.push_back(rec->tpot_s());
    if (rec->osl >= 1 && !shortened) e2e_norm.push_back(rec->e2el_s() / static_cast<double>(rec->osl));
    for (size_t i = 1; i < rec->chunk_ns.size(); ++i) {
      itl.push_back(static_cast<double>(rec->chunk_ns[i] - rec->chunk_ns[i - 1]) * 1e-9);
    }
    queue.push_back(rec->client_queue_s);
    isl.push_back(static_cast<double>(rec->isl));
    if (rec->isl_expected > 0 && rec->count_source == CountSource::kUsage) {
      double err = static_cast<double>(rec->isl - rec->isl_expected) / static_cast<double>(rec->isl_expected);
      BenchResult::IslError& e = r.isl_error ? *r.isl_error : r.isl_error.emplace();
      ++e.n;
      e.mean_abs += std::fabs(err);
      e.mean_signed += err;
      e.max_abs = std::max(e.max_abs, std::fabs(err));
    }
    osl.push_back(static_cast<double>(rec->osl));
    if (rec->cached_tokens >= 0) {
      cached += rec->cached_tokens;
      cached_known_isl += rec->isl;
    }
    hit_blocks += rec->hit_blocks;
    total_blocks += rec->total_blocks;
    bool meets = (slo.ttft_ms <= 0 || rec->ttft_s() * 1e3 <= slo.ttft_ms) &&
                 (slo.tpot_ms <= 0 || rec->osl < 2 || rec->tpot_s() * 1e3 <= slo.tpot_ms) &&
                 (slo.e2el_ms <= 0 || shortened || rec->e2el_s() * 1e3 <= slo.e2el_ms);
    if (meets) ++good;
    events.emplace_back(rec->t_start_ns, +1);
    events.emplace_back(rec->t_end_ns, -1);
    if (w0 != INT64_MAX) {
      completions_per_s[(rec->t_end_ns - w0) / 1'000'000'000]++;
      for (int64_t t : rec->chunk_ns) tokens_per_s[(t - w0) / 1'000'000'000]++;
    }
  }
  // A chunk may carry several tokens; scale the peak bucket by tokens per chunk.
  if (!tokens_per_s.empty()) {
    int64_t chunks = 0;
    for (const auto* rec : ok) chunks += static_cast<int64_t>(rec->chunk_ns.size());
    double tokens_per_chunk = chunks > 0 ? static_cast<double>(r.total_output_tokens) / static_cast<double>(chunks) : 1.0;
    int64_t peak = 0;
    for (const auto& [s, n] : tokens_per_s) peak = std::max(peak, n);
    r.peak_output_tps = static_cast<double>(peak) * tokens_per_chunk;
  }
  // A cut window counts the tokens streamed inside it, from every request: a request's
  // output tokens in proportion to its content chunks inside the window (one token per
  // chunk when it was cut, the server's count otherwise), and its prompt credited as its
  // output streams: isl / (the workload's osl) per output token inside the window. A
  // window shorter than a request's life otherwise samples a phase of the load, not its
  // steady state: at 64 slots with 1024-token outputs it saw decode only, never a
  // prefill (bench/results/gpu-2026-12-04), and with 4 slots each prefill landing inside
  // or just outside moved the total by 5-10%. Over a request's life the credit is its
  // whole prompt, so in the steady state it is the rate the server processes prompts;
  // the prompts actually prefilled inside the window are kept beside it
  // (prefilled_input_tokens). Latencies come from completed requests only.
  if (run.windowed && w0 != INT64_MAX && w1 > w0) {
    r.total_input_tokens = 0;
    r.total_output_tokens = 0;
    r.prefilled_input_tokens = 0;
    double input_credit = 0;
    for (const RequestRecord& rec : run.records) {
      if (rec.phase != Phase::kProfiling || (!rec.ok() && !rec.cut)) continue;
      const int64_t prompt = rec.isl > 0 ? rec.isl : rec.isl_expected;
      if (rec.t_first_ns >= w0 && rec.t_first_ns <= w1) r.prefilled_input_tokens += prompt;
      int64_t inside = 0;
      for (int64_t t : rec.chunk_ns) inside += t >= w0 && t <= w1;
      double out = 0;
      if (rec.cut || rec.chunk_ns.empty()) {
        out = static_cast<double>(inside);
      } else {
        out = static_cast<double>(rec.osl) * static_cast<double>(inside) / static_cast<double>(rec.chunk_ns.size());
      }
      r.total_output_tokens += static_cast<int64_t>(std::llround(out));
      const int64_t nominal = rec.osl_nominal > 0 ? rec.osl_nominal : rec.osl_expected;
      if (nominal > 0) {
        input_credit += static_cast<double>(prompt) * out / static_cast<double>(nominal);
      } else if (rec.t_first_ns >= w0 && rec.t_first_ns <= w1) {
        input_credit += static_cast<double>(prompt);  // no output length to spread it over
      }
    }
    r.total_input_tokens = static_cast<int64_t>(std::llround(input_credit));
  }
  std::sort(events.begin(), events.end());
  int cur = 0;
  for (const auto& [t, d] : events) {
    cur += d;
    r.peak_concurrency = std::max(r.peak_concurrency, cur);
  }
  if (r.duration_s > 0) {
    r.input_tps = static_cast<double>(r.total_input_tokens) / r.duration_s;
    if (r.prefilled_input_tokens >= 0) r.prefilled_input_tps = static_cast<double>(r.prefilled_input_tokens) / r.duration_s;
    r.output_tps = static_cast<double>(r.total_output_tokens) / r.duration_s;
    r.total_tps = r.input_tps + r.output_tps;
    r.request_rps = static_cast<double>(r.successful) / r.duration_s;
    r.achieved_concurrency = sum_e2el / r.duration_s;
    if (slo.any()) r.goodput_rps = static_cast<double>(good) / r.duration_s;
    std::vector<double> qps;
    int64_t windows = static_cast<int64_t>(std::ceil(r.duration_s));
    for (int64_t s = 0; s < windows; ++s) {
      auto it = completions_per_s.find(s);
      qps.push_back(it == completions_per_s.end() ? 0.0 : static_cast<double>(it->second));
    }
    r.qps = Summarize(qps);
  }
  int gpus = std::max(1, context.num_gpus);
  r.per_gpu_input_tps = r.input_tps / gpus;
  r.per_gpu_output_tps = r.output_tps / gpus;
  r.per_gpu_total_tps = r.total_tps / gpus;
  r.ttft = Summarize(ttft);
  r.tpot = Summarize(tpot);
  r.itl = Summarize(itl);
  r.e2el = Summarize(e2el);
  r.client_queue = Summarize(queue);
  r.e2e_norm = Summarize(e2e_norm);
  r.samples = {ttft, tpot, itl, e2el};
  if (r.isl_error) {
    r.isl_error->mean_abs /= r.isl_error->n;
    r.isl_error->mean_signed /= r.isl_error->n;
  }
  r.isl_dist = Summarize(isl);
  r.osl_dist = Summarize(osl);
  r.intvty = InversePercentiles(tpot);
  r.e2e_norm_intvty = InversePercentiles(e2e_norm);
  if (total_blocks > 0) r.theoretical_hit_rate = static_cast<double>(hit_blocks) / static_cast<double>(total_blocks);
  if (cached_known_isl > 0) r.usage_cached_rate = static_cast<double>(cached) / static_cast<double>(cached_known_isl);

  const ServerSeries& s = run.series;
  r.scrape_samples = static_cast<int>(s.samples.size());
  if (!names.prompt_tokens_total.empty()) r.server_prompt_tokens = s.Delta(names.prompt_tokens_total);
  if (!names.generation_tokens_total.empty()) r.server_generation_tokens = s.Delta(names.generation_tokens_total);
  if (!names.cache_hits_total.empty() && !names.cache_queries_total.empty()) {
    auto hits = s.Delta(names.cache_hits_total);
    auto queries = s.Delta(names.cache_queries_total);
    if (hits && queries && *queries > 0) r.server_hit_rate = *hits / *queries;
  } else if (!names.cached_prompt_tokens_total.empty() && r.server_prompt_tokens && *r.server_prompt_tokens > 0) {
    auto cached_delta = s.Delta(names.cached_prompt_tokens_total);
    if (cached_delta) r.server_hit_rate = *cached_delta / (*r.server_prompt_tokens + *cached_delta);
  }
  if (!names.kv_usage.empty()) r.kv_usage_max = s.Max(names.kv_usage);
  if (!names.requests_waiting.empty()) r.queue_depth_mean = s.Mean(names.requests_waiting);
  if (!names.requests_running.empty()) r.running_mean = s.Mean(names.requests_running);

  // Validity.
  if (r.total > 0 && static_cast<double>(r.failed) > context.max_error_rate * static_cast<double>(r.total)) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%d of %d requests failed (limit %.0f%%)", r.failed, r.total,
                  context.max_error_rate * 100);
    r.invalid_reasons.push_back(buf);
  }
  // A measurement window may end before any request completes (long outputs): the tokens
  // streamed inside it still measure throughput; latencies are then unknown.
  if (r.successful == 0 && r.cut == 0) r.invalid_reasons.push_back("no successful request");
  // No token inside the window measures nothing, whatever finished before it: the server
  // stalled (llama-server on an H200 with flash attention off at 4 requests in flight
  // served its first requests during the ramp, then none for 10 s: 0 tokens/s was no
  // measurement of the configuration's speed), or a token takes longer than the window.
  if ((r.successful > 0 || r.cut > 0) && r.total_output_tokens == 0) {
    r.invalid_reasons.push_back("no token arrived inside the measurement window");
  }
  if (r.successful > 0 && r.osl_mismatches * 100 > r.successful) {
    r.invalid_reasons.push_back(std::to_string(r.osl_mismatches) + " requests returned a different output length than forced");
  }
  // De-duplicate (the runner may have said the same).
  std::sort(r.invalid_reasons.begin(), r.invalid_reasons.end());
  r.invalid_reasons.erase(std::unique(r.invalid_reasons.begin(), r.invalid_reasons.end()), r.invalid_reasons.end());
  r.valid = r.invalid_reasons.empty();
  return r;
}

BenchResult PoolResults(const std::vector<const BenchResult*>& results) {
  BenchResult p;
  if (results.empty()) return p;
  p.context = results.front()->context;
  double good = 0;
  bool any_goodput = false;
  for (const BenchResult* r : results) {
    p.total += r->total;
    p.successful += r->successful;
    p.failed += r->failed;
    p.cut += r->cut;
    p.duration_s += r->duration_s;
    p.total_input_tokens += r->total_input_tokens;
    p.total_output_tokens += r->total_output_tokens;
    if (r->goodput_rps >= 0) {
      any_goodput = true;
      good += r->goodput_rps * r->duration_s;
    }
    for (auto [to, from] : {std::pair{&p.samples.ttft, &r->samples.ttft},
                            {&p.samples.tpot, &r->samples.tpot},
                            {&p.samples.itl, &r->samples.itl},
                            {&p.samples.e2el, &r->samples.e2el}}) {
      to->insert(to->end(), from->begin(), from->end());
    }
  }
  if (p.duration_s > 0) {
    p.input_tps = static_cast<double>(p.total_input_tokens) / p.duration_s;
    p.output_tps = static_cast<double>(p.total_output_tokens) / p.duration_s;
    p.total_tps = p.input_tps + p.output_tps;
    p.request_rps = static_cast<double>(p.successful) / p.duration_s;
    if (any_goodput) p.goodput_rps = good / p.duration_s;
  }
  const int gpus = std::max(1, p.context.num_gpus);
  p.per_gpu_input_tps = p.input_tps / gpus;
  p.per_gpu_output_tps = p.output_tps / gpus;
  p.per_gpu_total_tps = p.total_tps / gpus;
  p.ttft = Summarize(p.samples.ttft);
  p.tpot = Summarize(p.samples.tpot);
  p.itl = Summarize(p.samples.itl);
  p.e2el = Summarize(p.samples.e2el);
  p.intvty = InversePercentiles(p.samples.tpot);
  return p;
}

std::vector<std::string> MetricNames() {
  std::vector<std::string> names = {"total_tps",  "total_tps_per_gpu", "output_tps",         "output_tps_per_gpu",
                                    "input_tps",  "request_rps",       "goodput_rps",        "p50_intvty",
                                    "p90_intvty", "p95_intvty",        "p99_intvty",         "p90_e2e_norm_intvty"};
  for (const char* lat : {"ttft", "tpot", "itl", "e2el"}) {
    for (const char* stat : {"mean", "p50", "p90", "p95", "p99"}) names.push_back(std::string(stat) + "_" + lat + "_ms");
  }
  return names;
}

std::vector<std::string> ServerMetricNames() { return {"kv_usage_max", "queue_depth_mean", "running_mean"}; }

std::optional<double> Metric(const BenchResult& r, const std::string& name) {
  if (name == "total_tps") return r.total_tps;
  if (name == "kv_usage_max") return r.kv_usage_max;
  if (name == "queue_depth_mean") return r.queue_depth_mean;
  if (name == "running_mean") return r.running_mean;
  if (name == "total_tps_per_gpu") return r.per_gpu_total_tps;
  if (name == "output_tps") return r.output_tps;
  if (name == "output_tps_per_gpu") return r.per_gpu_output_tps;
  if (name == "input_tps") return r.input_tps;
  if (name == "request_rps") return r.request_rps;
  if (name == "goodput_rps") return r.goodput_rps >= 0 ? std::optional<double>(r.goodput_rps) : std::nullopt;
  auto inv = [](const std::map<std::string, double>& m, const char* k) -> std::optional<double> {
    auto it = m.find(k);
    return it == m.end() ? std::nullopt : std::optional<double>(it->second);
  };
  if (name == "p50_intvty") return inv(r.intvty, "p50");
  if (name == "p90_intvty") return inv(r.intvty, "p90");
  if (name == "p95_intvty") return inv(r.intvty, "p95");
  if (name == "p99_intvty") return inv(r.intvty, "p99");
  if (name == "p90_e2e_norm_intvty") return inv(r.e2e_norm_intvty, "p90");
  struct Lat {
    const char* prefix;
    const Summary* s;
  } lats[] = {{"ttft", &r.ttft}, {"tpot", &r.tpot}, {"itl", &r.itl}, {"e2el", &r.e2el}};
  for (const Lat& l : lats) {
    std::string p(l.prefix);
    if (l.s->n == 0) continue;
    if (name == "mean_" + p + "_ms") return l.s->mean * 1e3;
    if (name == "p50_" + p + "_ms") return l.s->p50 * 1e3;
    if (name == "p90_" + p + "_ms") return l.s->p90 * 1e3;
    if (name == "p95_" + p + "_ms") return l.s->p95 * 1e3;
    if (name == "p99_" + p + "_ms") return l.s->p99 * 1e3;
  }
  return std::nullopt;
}

}  // namespace hone::bench
