#include "bench/result_io.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>

#include "sys/clock.h"
#include "sys/files.h"

namespace hone::bench {

using json = nlohmann::ordered_json;

namespace {

double R5(double v) { return std::round(v * 1e5) / 1e5; }

json SummaryJson(const Summary& s) {
  return {{"n", s.n},          {"mean", R5(s.mean)}, {"p50", R5(s.p50)}, {"p75", R5(s.p75)},
          {"p90", R5(s.p90)},  {"p95", R5(s.p95)},   {"p99", R5(s.p99)}, {"p99.9", R5(s.p999)},
          {"std", R5(s.std)},  {"min", R5(s.min)},   {"max", R5(s.max)}};
}

Summary SummaryFrom(const json& j) {
  Summary s;
  if (!j.is_object()) return s;
  s.n = j.value("n", size_t{0});
  s.mean = j.value("mean", 0.0);
  s.p50 = j.value("p50", 0.0);
  s.p75 = j.value("p75", 0.0);
  s.p90 = j.value("p90", 0.0);
  s.p95 = j.value("p95", 0.0);
  s.p99 = j.value("p99", 0.0);
  s.p999 = j.value("p99.9", 0.0);
  s.std = j.value("std", 0.0);
  s.min = j.value("min", 0.0);
  s.max = j.value("max", 0.0);
  return s;
}

json Opt(const std::optional<double>& v) { return v ? json(R5(*v)) : json(nullptr); }
std::optional<double> OptFrom(const json& j, const char* k) {
  if (!j.contains(k) || j[k].is_null()) return std::nullopt;
  return j[k].get<double>();
}

json IntvtyJson(const std::map<std::string, double>& m) {
  json o = json::object();
  for (const auto& [k, v] : m) o[k] = R5(v);
  return o;
}

json VllmCompat(const BenchResult& r) {
  json c = {{"duration", R5(r.duration_s)},
            {"completed", r.successful},
            {"failed", r.failed},
            {"total_input_tokens", r.total_input_tokens},
            {"total_output_tokens", r.total_output_tokens},
            {"request_throughput", R5(r.request_rps)},
            {"request_goodput", r.goodput_rps >= 0 ? json(R5(r.goodput_rps)) : json(nullptr)},
            {"output_throughput", R5(r.output_tps)},
            {"total_token_throughput", R5(r.total_tps)},
            {"max_output_tokens_per_s", R5(r.peak_output_tps)},
            {"max_concurrent_requests", r.peak_concurrency},
            {"max_concurrency", r.context.concurrency}};
  struct L {
    const char* name;
    const Summary* s;
  } lats[] = {{"ttft", &r.ttft}, {"tpot", &r.tpot}, {"itl", &r.itl}, {"e2el", &r.e2el}};
  for (const L& l : lats) {
    std::string n(l.name);
    c["mean_" + n + "_ms"] = R5(l.s->mean * 1e3);
    c["median_" + n + "_ms"] = R5(l.s->p50 * 1e3);
    c["std_" + n + "_ms"] = R5(l.s->std * 1e3);
    c["p90_" + n + "_ms"] = R5(l.s->p90 * 1e3);
    c["p99_" + n + "_ms"] = R5(l.s->p99 * 1e3);
    c["p99.9_" + n + "_ms"] = R5(l.s->p999 * 1e3);
  }
  return c;
}

json InferenceXCompat(const BenchResult& r) {
  auto stats = [](const Summary& s) {
    return json{{"mean", R5(s.mean)}, {"p50", R5(s.p50)}, {"p75", R5(s.p75)},
                {"p90", R5(s.p90)},   {"p95", R5(s.p95)}, {"std", R5(s.std)}};
  };
  auto inv = [](const std::map<std::string, double>& m) {
    json o = json::object();
    for (const char* k : {"mean", "p50", "p75", "p90", "p95"}) {
      auto it = m.find(k);
      o[k] = it == m.end() ? json(nullptr) : json(R5(it->second));
    }
    return o;
  };
  return {{"conc", r.context.concurrency},
          {"num_requests_total", r.total},
          {"num_requests_successful", r.successful},
          {"request_metrics",
           {{"qps", stats(r.qps)},
            {"latency",
             {{"ttft", stats(r.ttft)},
              {"e2el", stats(r.e2el)},
              {"itl", stats(r.tpot)},
              {"tpot", stats(r.tpot)},
              {"intvty", inv(r.intvty)},
              {"e2e_norm_intvty", inv(r.e2e_norm_intvty)}}},
            {"tokens", {{"input", r.total_input_tokens}, {"output_actual", r.total_output_tokens},
                        {"output_expected", r.total_expected_output_tokens}}},
            {"throughput",
             {{"input", {{"tokens_per_second", R5(r.input_tps)}}},
              {"output", {{"tokens_per_second", R5(r.output_tps)}}},
              {"total", {{"tokens_per_second", R5(r.total_tps)}}},
              {"duration_seconds", R5(r.duration_s)},
              {"per_gpu", {{"total_tput_tps", R5(r.per_gpu_total_tps)}, {"output_tput_tps", R5(r.per_gpu_output_tps)},
                           {"input_tput_tps", R5(r.per_gpu_input_tps)}}}}},
            {"cache", {{"theoretical_cache_hit_rate", Opt(r.theoretical_hit_rate)}}}}},
          {"tput_per_gpu", R5(r.per_gpu_total_tps)},
          {"output_tput_per_gpu", R5(r.per_gpu_output_tps)},
          {"input_tput_per_gpu", R5(r.per_gpu_input_tps)},
          {"median_intvty", r.intvty.count("p50") ? json(R5(r.intvty.at("p50"))) : json(nullptr)},
          {"p90_intvty", r.intvty.count("p90") ? json(R5(r.intvty.at("p90"))) : json(nullptr)}};
}

}  // namespace

std::string ResultToJson(const BenchResult& r) {
  const RunContext& c = r.context;
  json j;
  j["schema"] = "hone-bench/1";
  j["kind"] = c.kind;
  j["run"] = {{"tool_version", c.tool_version}, {"seed", c.seed}, {"start_utc", sys::FormatUtc(c.start_unix_us)},
              {"start_unix_us", c.start_unix_us}, {"duration_s", R5(r.duration_s)}, {"valid", r.valid},
              {"invalid_reasons", r.invalid_reasons}};
  j["config"] = {{"endpoint", c.endpoint}, {"framework", c.framework}, {"model", c.model}, {"load", c.load},
                 {"concurrency", c.concurrency}, {"request_rate", c.request_rate > 0 ? json(c.request_rate) : json("inf")},
                 {"isl", c.isl}, {"osl", c.osl}, {"range_ratio", c.range_ratio},
                 {"range_semantics", c.range_semantics}, {"num_prompts", c.num_prompts},
                 {"num_warmups", c.num_warmups}, {"trace", c.trace}, {"max_error_rate", c.max_error_rate}};
  j["deployment"] = {{"hw", c.hardware}, {"framework", c.framework}, {"precision", c.precision},
                     {"num_gpus", c.num_gpus}};
  json cats = json::object();
  for (const auto& [k, v] : r.error_categories) cats[k] = v;
  j["requests"] = {{"total", r.total}, {"successful", r.successful}, {"warmup_dropped", r.warmup},
                   {"error_dropped", r.failed}, {"osl_mismatch", r.osl_mismatches}, {"cut_at_window_end", r.cut},
                   {"error_categories", cats}};
  if (!r.warmup_error_categories.empty()) j["requests"]["warmup_error_categories"] = r.warmup_error_categories;
  j["throughput"] = {{"input_tps", R5(r.input_tps)}, {"output_tps", R5(r.output_tps)}, {"total_tps", R5(r.total_tps)},
                     {"request_rps", R5(r.request_rps)},
                     {"per_gpu", {{"input_tps", R5(r.per_gpu_input_tps)}, {"output_tps", R5(r.per_gpu_output_tps)},
                                  {"total_tps", R5(r.per_gpu_total_tps)}}},
                     {"goodput_rps", r.goodput_rps >= 0 ? json(R5(r.goodput_rps)) : json(nullptr)},
                     {"peak_output_tps", R5(r.peak_output_tps)},
                     {"achieved_concurrency", R5(r.achieved_concurrency)},
                     {"peak_concurrency", r.peak_concurrency}};
  if (r.prefilled_input_tokens >= 0) {
    j["throughput"]["window_prompt_credit"] = "per output token: isl / osl";
    j["throughput"]["prefilled_input_tps"] = R5(r.prefilled_input_tps);
    j["throughput"]["prefilled_input_tokens"] = r.prefilled_input_tokens;
  }
  j["latency_s"] = {{"ttft", SummaryJson(r.ttft)}, {"tpot", SummaryJson(r.tpot)}, {"itl", SummaryJson(r.itl)},
                    {"e2el", SummaryJson(r.e2el)}, {"client_queue", SummaryJson(r.client_queue)},
                    {"e2e_norm", SummaryJson(r.e2e_norm)}};
  // The per-request latencies, for checks pooled over trials (bench::PoolResults).
  j["samples_s"] = {{"ttft", r.samples.ttft}, {"tpot", r.samples.tpot}, {"itl", r.samples.itl}, {"e2el", r.samples.e2el}};
  j["qps"] = SummaryJson(r.qps);
  j["interactivity"] = {{"intvty", IntvtyJson(r.intvty)}, {"e2e_norm_intvty", IntvtyJson(r.e2e_norm_intvty)}};
  j["tokens"] = {{"isl", SummaryJson(r.isl_dist)}, {"osl_actual", SummaryJson(r.osl_dist)},
                 {"total_input", r.total_input_tokens}, {"total_output", r.total_output_tokens},
                 {"total_output_expected", r.total_expected_output_tokens}, {"count_source", r.count_source}};
  if (r.isl_error) {
    j["tokens"]["isl_error"] = {{"n", r.isl_error->n}, {"mean_abs", R5(r.isl_error->mean_abs)},
                                {"max_abs", R5(r.isl_error->max_abs)}, {"mean_signed", R5(r.isl_error->mean_signed)}};
  }
  if (!r.context.token_sizing.empty()) j["tokens"]["sizing"] = r.context.token_sizing;
  j["cache"] = {{"theoretical_hit_rate", Opt(r.theoretical_hit_rate)}, {"usage_cached_rate", Opt(r.usage_cached_rate)},
                {"server_hit_rate", Opt(r.server_hit_rate)}};
  j["server"] = {{"prompt_tokens", Opt(r.server_prompt_tokens)}, {"generation_tokens", Opt(r.server_generation_tokens)},
                 {"kv_usage_max", Opt(r.kv_usage_max)}, {"queue_depth_mean", Opt(r.queue_depth_mean)},
                 {"running_mean", Opt(r.running_mean)}, {"scrape_samples", r.scrape_samples}};
  j["compat"] = {{"vllm_bench", VllmCompat(r)}, {"inferencex_agg", InferenceXCompat(r)}};
  return j.dump(2) + "\n";
}

Result<BenchResult> ResultFromJson(const std::string& text) {
  return TryCatch(ErrorCode::kDataLoss, "reading bench result", [&] {
    json j = json::parse(text);
    if (j.value("schema", "") != "hone-bench/1") throw std::runtime_error("not a hone-bench/1 result");
    BenchResult r;
    RunContext& c = r.context;
    c.kind = j.value("kind", "fixed");
    const json& run = j.at("run");
    c.tool_version = run.value("tool_version", "");
    c.seed = run.value("seed", uint64_t{0});
    c.start_unix_us = run.value("start_unix_us", int64_t{0});
    r.duration_s = run.value("duration_s", 0.0);
    r.valid = run.value("valid", false);
    r.invalid_reasons = run.value("invalid_reasons", std::vector<std::string>{});
    const json& cfg = j.at("config");
    c.endpoint = cfg.value("endpoint", "");
    c.framework = cfg.value("framework", "");
    c.model = cfg.value("model", "");
    c.load = cfg.value("load", "");
    c.concurrency = cfg.value("concurrency", 0);
    c.request_rate = cfg["request_rate"].is_number() ? cfg["request_rate"].get<double>() : 0.0;
    c.isl = cfg.value("isl", int64_t{0});
    c.osl = cfg.value("osl", int64_t{0});
    c.range_ratio = cfg.value("range_ratio", 0.0);
    c.range_semantics = cfg.value("range_semantics", "");
    c.num_prompts = cfg.value("num_prompts", 0);
    c.num_warmups = cfg.value("num_warmups", 0);
    c.trace = cfg.value("trace", "");
    c.max_error_rate = cfg.value("max_error_rate", 0.1);
    const json& dep = j.at("deployment");
    c.hardware = dep.value("hw", "");
    c.precision = dep.value("precision", "");
    c.num_gpus = dep.value("num_gpus", 1);
    const json& req = j.at("requests");
    r.total = req.value("total", 0);
    r.successful = req.value("successful", 0);
    r.warmup = req.value("warmup_dropped", 0);
    r.failed = req.value("error_dropped", 0);
    r.osl_mismatches = req.value("osl_mismatch", 0);
    r.cut = req.value("cut_at_window_end", 0);
    for (auto& [k, v] : req.at("error_categories").items()) r.error_categories[k] = v.get<int>();
    if (req.contains("warmup_error_categories")) {
      for (auto& [k, v] : req["warmup_error_categories"].items()) r.warmup_error_categories[k] = v.get<int>();
    }
    const json& t = j.at("throughput");
    r.input_tps = t.value("input_tps", 0.0);
    r.output_tps = t.value("output_tps", 0.0);
    r.total_tps = t.value("total_tps", 0.0);
    r.prefilled_input_tps = t.value("prefilled_input_tps", -1.0);
    r.prefilled_input_tokens = t.value("prefilled_input_tokens", int64_t{-1});
    r.request_rps = t.value("request_rps", 0.0);
    r.per_gpu_input_tps = t["per_gpu"].value("input_tps", 0.0);
    r.per_gpu_output_tps = t["per_gpu"].value("output_tps", 0.0);
    r.per_gpu_total_tps = t["per_gpu"].value("total_tps", 0.0);
    r.goodput_rps = t["goodput_rps"].is_null() ? -1.0 : t["goodput_rps"].get<double>();
    r.peak_output_tps = t.value("peak_output_tps", 0.0);
    r.achieved_concurrency = t.value("achieved_concurrency", 0.0);
    r.peak_concurrency = t.value("peak_concurrency", 0);
    const json& lat = j.at("latency_s");
    r.ttft = SummaryFrom(lat["ttft"]);
    r.tpot = SummaryFrom(lat["tpot"]);
    r.itl = SummaryFrom(lat["itl"]);
    r.e2el = SummaryFrom(lat["e2el"]);
    r.client_queue = SummaryFrom(lat["client_queue"]);
    r.e2e_norm = SummaryFrom(lat["e2e_norm"]);
    if (j.contains("samples_s")) {
      const json& smp = j["samples_s"];
      r.samples.ttft = smp.value("ttft", std::vector<double>{});
      r.samples.tpot = smp.value("tpot", std::vector<double>{});
      r.samples.itl = smp.value("itl", std::vector<double>{});
      r.samples.e2el = smp.value("e2el", std::vector<double>{});
    }
    r.qps = SummaryFrom(j["qps"]);
    for (auto& [k, v] : j["interactivity"]["intvty"].items()) r.intvty[k] = v.get<double>();
    for (auto& [k, v] : j["interactivity"]["e2e_norm_intvty"].items()) r.e2e_norm_intvty[k] = v.get<double>();
    const json& tok = j.at("tokens");
    r.isl_dist = SummaryFrom(tok["isl"]);
    r.osl_dist = SummaryFrom(tok["osl_actual"]);
    r.total_input_tokens = tok.value("total_input", int64_t{0});
    r.total_output_tokens = tok.value("total_output", int64_t{0});
    r.total_expected_output_tokens = tok.value("total_output_expected", int64_t{0});
    r.count_source = tok.value("count_source", "");
    c.token_sizing = tok.value("sizing", "");
    if (tok.contains("isl_error") && tok["isl_error"].is_object()) {
      const json& e = tok["isl_error"];
      r.isl_error = BenchResult::IslError{e.value("n", 0), e.value("mean_abs", 0.0), e.value("max_abs", 0.0),
                                          e.value("mean_signed", 0.0)};
    }
    r.theoretical_hit_rate = OptFrom(j["cache"], "theoretical_hit_rate");
    r.usage_cached_rate = OptFrom(j["cache"], "usage_cached_rate");
    r.server_hit_rate = OptFrom(j["cache"], "server_hit_rate");
    r.server_prompt_tokens = OptFrom(j["server"], "prompt_tokens");
    r.server_generation_tokens = OptFrom(j["server"], "generation_tokens");
    r.kv_usage_max = OptFrom(j["server"], "kv_usage_max");
    r.queue_depth_mean = OptFrom(j["server"], "queue_depth_mean");
    r.running_mean = OptFrom(j["server"], "running_mean");
    r.scrape_samples = j["server"].value("scrape_samples", 0);
    return r;
  });
}

Status WriteResultJson(const std::string& path, const BenchResult& r) {
  return sys::WriteFileAtomic(path, ResultToJson(r));
}

Result<BenchResult> ReadResultJson(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(path));
  auto r = ResultFromJson(text);
  if (!r) return Fail(std::move(r.error()).With("path", path));
  return r;
}

Status WriteRecordsJsonl(const std::string& path, const std::vector<RequestRecord>& records) {
  std::string out;
  for (const RequestRecord& rec : records) {
    json j = {{"index", rec.index},
              {"phase", rec.phase == Phase::kWarmup ? "warmup" : "profiling"},
              {"session", rec.session},
              {"turn", rec.turn},
              {"t_start_ns", rec.t_start_ns},
              {"t_first_ns", rec.t_first_ns},
              {"t_last_ns", rec.t_last_ns},
              {"t_end_ns", rec.t_end_ns},
              {"isl", rec.isl},
              {"isl_expected", rec.isl_expected},
              {"osl", rec.osl},
              {"osl_expected", rec.osl_expected},
              {"cached", rec.cached_tokens},
              {"count_source", CountSourceName(rec.count_source)},
              {"chunks", rec.chunk_ns.size()},
              {"http_status", rec.http_status},
              {"error", rec.ok() ? json(nullptr) : json(ErrorCategoryName(rec.error))},
              {"error_detail", rec.error_detail},
              {"client_queue_s", rec.client_queue_s}};
    if (rec.total_blocks) j["hit_blocks"] = rec.hit_blocks, j["total_blocks"] = rec.total_blocks;
    out += j.dump();
    out += '\n';
  }
  return sys::WriteFileAtomic(path, out);
}

std::string FormatTable(const BenchResult& r) {
  std::string out;
  char line[160];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    out += line;
  };
  add("============ hone bench (%s) ============\n", r.context.kind.c_str());
  add("%-34s %s\n", "Load:", r.context.load.c_str());
  add("%-34s %d ok / %d failed / %d warm-up\n", "Requests:", r.successful, r.failed, r.warmup);
  if (r.cut > 0) add("%-34s %d (tokens to the cut counted)\n", "Cut at the window's end:", r.cut);
  for (const auto& [k, v] : r.error_categories) add("  %-32s %d\n", k.c_str(), v);
  add("%-34s %.2f\n", "Duration (s):", r.duration_s);
  add("%-34s %lld / %lld\n", "Input / output tokens:", static_cast<long long>(r.total_input_tokens),
      static_cast<long long>(r.total_output_tokens));
  add("%-34s %.2f\n", "Request throughput (req/s):", r.request_rps);
  add("%-34s %.2f\n", "Output token throughput (tok/s):", r.output_tps);
  add("%-34s %.2f\n", "Total token throughput (tok/s):", r.total_tps);
  if (r.goodput_rps >= 0) add("%-34s %.2f\n", "Goodput (req/s):", r.goodput_rps);
  add("%-34s %.2f (peak %d)\n", "Achieved concurrency:", r.achieved_concurrency, r.peak_concurrency);
  add("%-12s %10s %10s %10s %10s\n", "(ms)", "mean", "p50", "p90", "p99");
  struct L {
    const char* name;
    const Summary* s;
  } lats[] = {{"TTFT", &r.ttft}, {"TPOT", &r.tpot}, {"ITL", &r.itl}, {"E2EL", &r.e2el}};
  for (const L& l : lats) {
    add("%-12s %10.2f %10.2f %10.2f %10.2f\n", l.name, l.s->mean * 1e3, l.s->p50 * 1e3, l.s->p90 * 1e3, l.s->p99 * 1e3);
  }
  if (r.intvty.count("p90")) {
    add("%-34s %.2f / %.2f\n", "Interactivity p50 / p90 (tok/s/user):", r.intvty.at("p50"), r.intvty.at("p90"));
  }
  if (r.theoretical_hit_rate) add("%-34s %.1f%%\n", "Theoretical cache hit:", *r.theoretical_hit_rate * 100);
  if (r.usage_cached_rate) add("%-34s %.1f%%\n", "Cached prompt tokens (usage):", *r.usage_cached_rate * 100);
  if (r.server_hit_rate) add("%-34s %.1f%%\n", "Server cache hit (metrics):", *r.server_hit_rate * 100);
  add("%-34s %s\n", "Token counts from:", r.count_source.c_str());
  if (!r.context.token_sizing.empty()) add("%-34s %s\n", "Payload sizing:", r.context.token_sizing.c_str());
  if (r.isl_error) {
    add("%-34s mean %.2f%% (signed %+.2f%%), max %.2f%% over %d\n", "ISL error vs plan:", r.isl_error->mean_abs * 100,
        r.isl_error->mean_signed * 100, r.isl_error->max_abs * 100, r.isl_error->n);
  }
  if (!r.valid) {
    out += "INVALID RUN (not a result):\n";
    for (const auto& reason : r.invalid_reasons) out += "  - " + reason + "\n";
  }
  return out;
}

}  // namespace hone::bench
