// `hone bench`: the load generator on its own, against any OpenAI-compatible server.
#include <cstdio>
#include <filesystem>
#include <optional>

#include "bench/metrics.h"
#include "bench/replay.h"
#include "bench/result_io.h"
#include "bench/runner.h"
#include "bench/selfcheck.h"
#include "bench/tracegen.h"
#include "bench/workload.h"
#include "cli/commands.h"
#include "run/executor.h"
#include "core/strings.h"
#include "model/gguf.h"
#include "net/http.h"
#include "sys/clock.h"
#include "sys/files.h"

namespace hone::cli {

namespace fs = std::filesystem;

namespace {

struct BenchOpts {
  std::string url = "http://127.0.0.1:8080";
  std::string framework = "llama.cpp";
  std::string endpoint;  // default: completions (fixed), chat (agentic)
  std::string model_name;
  int64_t isl = 128, osl = 64;
  double range_ratio = 0;
  std::string semantics = "vllm";  // ratio 0 = exact lengths
  int num_prompts = 0;
  int warmups = -1;
  std::vector<int> concurrency = {1};
  std::string load = "closed";
  double duration = 0;
  uint64_t seed = 42;
  std::string trace;
  double think_scale = 1.0;
  double start_min = 0.25, start_max = 0.75;
  int64_t max_context = 0;
  std::string out;
  double slo_ttft_ms = 0, slo_tpot_ms = 0, slo_e2el_ms = 0;
  int num_gpus = 1;
  double idle_timeout_s = 120;
  double max_error_rate = 0.10;
  bool no_scrape = false;
  bool quiet = false;
  std::string tokens = "auto";  // agentic payload sizing: auto (the server's tokenizer) | words
  std::string vocab;            // a GGUF file whose vocabulary sizes payloads without /tokenize
  std::string token_cache;      // where token plans are kept
};

int RunBench(BenchOpts o, const Context& cli) {
  if (o.endpoint.empty()) o.endpoint = o.trace.empty() ? "completions" : "chat";
  auto url = net::ParseUrl(o.url);
  if (!url) return ReportError(url.error());
  auto profile = run::BenchProfileFor(o.framework, cli.data_dir);
  if (!profile) return ReportError(profile.error());
  profile->model_name = o.model_name;
  auto semantics = bench::ParseRangeSemantics(o.semantics);
  if (!semantics) return ReportError(semantics.error());
  if (o.endpoint != "completions" && o.endpoint != "chat") {
    return ReportError(Error{ErrorCode::kInvalidArgument, "--endpoint must be completions or chat", {}});
  }
  std::vector<bench::Trace> traces;
  if (!o.trace.empty()) {
    auto t = bench::LoadTraces(o.trace);
    if (!t) return ReportError(t.error());
    traces = std::move(*t);
    if (o.duration <= 0) {
      return ReportError(Error{ErrorCode::kInvalidArgument, "agentic replay needs --duration SECONDS", {}});
    }
  }
  fs::path out_dir = o.out.empty() ? fs::path("hone-bench-" + std::to_string(sys::DefaultClock().WallMicros() / 1000000))
                                   : fs::path(o.out);
  if (auto s = sys::EnsureDir(out_dir); !s) return ReportError(s.error());
  // Agentic replay: size payloads with the server's own tokenizer (token plan).
  std::optional<bench::TokenPlan> tokens;
  std::string token_sizing = "tokens-per-word 1.3";
  if (!traces.empty() && o.tokens == "auto") {
    bench::CalibrationOptions co;
    co.host = url->host;
    co.port = url->port;
    co.profile = *profile;
    co.cache_dir = o.token_cache;
    if (!o.vocab.empty()) {
      auto vocab = model::ReadGgufVocab(o.vocab);
      if (!vocab) return ReportError(vocab.error());
      co.vocab_pieces = std::move(vocab->pieces);
      co.vocab_model = vocab->model;
    }
    auto plan = bench::CalibrateTokens(co);
    if (!plan) return ReportError(Error{plan.error().code, "cannot size payloads in tokens: " + plan.error().message +
                                                               " (use --tokens words for approximate sizing)", {}});
    tokens = std::move(*plan);
    token_sizing = tokens->source;
  } else if (!traces.empty() && o.tokens != "words") {
    return ReportError(Error{ErrorCode::kInvalidArgument, "--tokens must be auto or words", {}});
  }
  int64_t slot_context = 0;
  if (auto limits = bench::ProbeServerLimits(url->host, url->port, *profile)) slot_context = limits->slot_context;
  bool any_invalid = false;
  for (int conc : o.concurrency) {
    if (conc < 1) return ReportError(Error{ErrorCode::kInvalidArgument, "--concurrency values must be >= 1", {}});
    auto shape = bench::LoadShape::Parse(o.load, conc);
    if (!shape) return ReportError(shape.error());
    bench::RunOptions run;
    run.host = url->host;
    run.port = url->port;
    run.profile = *profile;
    run.shape = *shape;
    run.limits.idle_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.idle_timeout_s * 1000));
    run.limits.total_timeout = std::chrono::milliseconds(static_cast<int64_t>(std::max(600.0, o.idle_timeout_s * 10) * 1000));
    run.duration_s = traces.empty() ? o.duration : 0;
    run.scrape_interval_s = o.no_scrape ? 0 : 1.0;
    run.seed = o.seed;
    run.max_error_rate = o.max_error_rate;
    run.progress = !o.quiet;
    run.slot_context = slot_context;
    bench::RunContext ctx;
    ctx.framework = o.framework;
    ctx.model = o.model_name;
    ctx.load = shape->ToString();
    ctx.concurrency = conc;
    ctx.request_rate = shape->rate_rps;
    ctx.seed = o.seed;
    ctx.num_gpus = o.num_gpus;
    ctx.tool_version = HONE_VERSION;
    ctx.start_unix_us = sys::DefaultClock().WallMicros();
    ctx.max_error_rate = o.max_error_rate;
    Result<bench::RunOutput> output = Internal("not run");
    if (!traces.empty()) {
      ctx.kind = "agentic";
      ctx.trace = o.trace;
      ctx.token_sizing = token_sizing;
      bench::AgenticOptions ag;
      ag.endpoint = o.endpoint == "completions" ? bench::Endpoint::kCompletions : bench::Endpoint::kChat;
      ctx.endpoint = std::string(bench::EndpointPath(ag.endpoint));
      ag.tokens = tokens ? &*tokens : nullptr;
      ag.concurrency = conc;
      ag.duration_s = o.duration;
      ag.seed = o.seed;
      ag.think_scale = o.think_scale;
      ag.start_min = o.start_min;
      ag.start_max = o.start_max;
      ag.max_context = o.max_context;
      output = bench::RunAgentic(traces, ag, run);
    } else {
      bench::FixedWorkloadSpec w;
      w.endpoint = o.endpoint == "chat" ? bench::Endpoint::kChat : bench::Endpoint::kCompletions;
      w.isl = o.isl;
      w.osl = o.osl;
      w.range_ratio = o.range_ratio;
      w.semantics = *semantics;
      w.num_prompts = o.num_prompts > 0 ? o.num_prompts : 10 * conc;
      w.num_warmups = o.warmups >= 0 ? o.warmups : std::min(conc, 8);
      w.seed = o.seed;
      ctx.endpoint = std::string(bench::EndpointPath(w.endpoint));
      ctx.isl = o.isl;
      ctx.osl = o.osl;
      ctx.range_ratio = o.range_ratio;
      ctx.range_semantics = std::string(bench::RangeSemanticsName(*semantics));
      ctx.num_prompts = w.num_prompts;
      ctx.num_warmups = w.num_warmups;
      output = bench::RunRequests(bench::GenerateFixed(w), run);
    }
    if (!output) return ReportError(output.error());
    bench::BenchResult result =
        bench::ComputeResult(*output, ctx, {o.slo_ttft_ms, o.slo_tpot_ms, o.slo_e2el_ms}, profile->metrics);
    fs::path dir = o.concurrency.size() > 1 ? out_dir / ("c" + std::to_string(conc)) : out_dir;
    if (auto s = sys::EnsureDir(dir); !s) return ReportError(s.error());
    if (auto s = bench::WriteResultJson((dir / "result.json").string(), result); !s) return ReportError(s.error());
    if (auto s = bench::WriteRecordsJsonl((dir / "records.jsonl").string(), output->records); !s) {
      return ReportError(s.error());
    }
    std::printf("%s", bench::FormatTable(result).c_str());
    std::printf("result: %s\n", (dir / "result.json").string().c_str());
    std::fflush(stdout);
    any_invalid = any_invalid || !result.valid;
    if (output->interrupted) return 130;
  }
  return any_invalid ? 3 : 0;
}

}  // namespace

Action RegisterBench(CLI::App& app, const Context& ctx) {
  auto* cmd = app.add_subcommand("bench", "Benchmark an OpenAI-compatible server (fixed lengths or agentic replay)");
  cmd->require_subcommand(1);
  auto* run = cmd->add_subcommand("run", "Run a benchmark against a server");
  auto o = std::make_shared<BenchOpts>();
  run->add_option("--url", o->url, "Server base URL (http only)");
  run->add_option("--framework", o->framework, "llama.cpp, vllm, sglang or generic (exact-length fields, metric names)");
  run->add_option("--endpoint", o->endpoint,
                  "completions (token-id prompts, exact ISL) or chat; agentic replay: chat unless given");
  run->add_option("--model-name", o->model_name, "The request's \"model\" field");
  run->add_option("--isl", o->isl, "Input tokens per request");
  run->add_option("--osl", o->osl, "Output tokens per request (forced)");
  run->add_option("--range-ratio", o->range_ratio, "Length spread ratio");
  run->add_option("--range-semantics", o->semantics, "inferencex ([L*r, L]) or vllm ([L(1-r), L(1+r)])");
  run->add_option("--num-prompts", o->num_prompts, "Measured requests (default 10 x concurrency)");
  run->add_option("--warmups", o->warmups, "Warm-up requests (default min(concurrency, 8))");
  run->add_option("--concurrency", o->concurrency, "Concurrency, or a list for a sweep: 1,2,4,8")->delimiter(',');
  run->add_option("--load", o->load, "closed, poisson:RATE or constant:RATE (requests/s)");
  run->add_option("--duration", o->duration, "Seconds (agentic: the measurement window; fixed: a time limit)");
  run->add_option("--seed", o->seed, "Seed for prompts and arrivals");
  run->add_option("--trace", o->trace, "AgentX/Weka trace file (JSON or JSONL): agentic session replay");
  run->add_option("--think-scale", o->think_scale, "Scale recorded think times (agentic; 1 = as recorded)");
  run->add_option("--start-min", o->start_min, "Agentic: earliest start fraction of a trace for initial lanes");
  run->add_option("--start-max", o->start_max, "Agentic: latest start fraction");
  run->add_option("--max-context", o->max_context, "Agentic: drop traces with a request above this (in+out)");
  run->add_option("--out", o->out, "Output directory (result.json, records.jsonl)");
  run->add_option("--slo-ttft-ms", o->slo_ttft_ms, "Goodput SLO on TTFT (ms)");
  run->add_option("--slo-tpot-ms", o->slo_tpot_ms, "Goodput SLO on TPOT (ms)");
  run->add_option("--slo-e2el-ms", o->slo_e2el_ms, "Goodput SLO on end-to-end latency (ms)");
  run->add_option("--num-gpus", o->num_gpus, "GPUs serving (for per-GPU throughput)");
  run->add_option("--timeout", o->idle_timeout_s, "Per-request stall timeout (s)");
  run->add_option("--max-error-rate", o->max_error_rate, "Above this error fraction the run is invalid");
  run->add_flag("--no-scrape", o->no_scrape, "Do not scrape /metrics");
  run->add_option("--tokens", o->tokens,
                  "Agentic payload sizing: auto (the server's tokenizer: exact input lengths) or words (approximate)");
  run->add_option("--vocab", o->vocab, "Agentic: a GGUF file whose vocabulary sizes payloads (servers without /tokenize)");
  run->add_flag("--quiet", o->quiet, "No progress line");

  auto* self = cmd->add_subcommand("selfcheck", "Measure the client itself against a loopback SSE emitter");
  auto so = std::make_shared<bench::SelfCheckOptions>();
  self->add_option("--streams", so->streams, "Concurrent streams (throughput)");
  self->add_option("--chunks", so->chunks_per_stream, "Chunks per stream (throughput)");
  auto no_python = std::make_shared<bool>(false);
  self->add_flag("--no-python", *no_python, "Skip the Python asyncio reference client");

  auto* gen = cmd->add_subcommand("gen-trace", "Write synthetic agentic sessions in the AgentX trace format");
  auto preset = std::make_shared<std::string>("cpu");
  auto sessions = std::make_shared<int>(0);
  auto gen_seed = std::make_shared<uint64_t>(42);
  auto gen_out = std::make_shared<std::string>();
  gen->add_option("--preset", *preset, "cpu (small prompts) or gpu (corpus-like sizes)");
  gen->add_option("--sessions", *sessions, "Number of sessions (default from the preset)");
  gen->add_option("--seed", *gen_seed, "Seed");
  gen->add_option("--out", *gen_out, "Output JSONL file")->required();

  return [run, self, gen, o, so, no_python, preset, sessions, gen_seed, gen_out, &ctx]() -> int {
    if (run->parsed()) {
      if (o->token_cache.empty()) o->token_cache = (ctx.cache_dir / "tokens").string();
      return RunBench(*o, ctx);
    }
    if (self->parsed()) {
      bench::SelfCheckOptions opts = *so;
      if (!*no_python) opts.python_client = ctx.data_dir + "/bench/ref_client.py";
      auto r = bench::RunSelfCheck(opts);
      if (!r) return ReportError(r.error());
      std::printf("%s", r->ToText().c_str());
      return 0;
    }
    if (gen->parsed()) {
      auto opts = bench::TraceGenPreset(*preset);
      if (!opts) return ReportError(opts.error());
      if (*sessions > 0) opts->sessions = *sessions;
      opts->seed = *gen_seed;
      auto traces = bench::GenerateTraces(*opts);
      if (auto s = bench::WriteTraces(*gen_out, traces); !s) return ReportError(s.error());
      size_t requests = 0;
      for (const auto& t : traces) requests += t.RequestCount();
      std::printf("wrote %zu sessions, %zu requests to %s\n", traces.size(), requests, gen_out->c_str());
      return 0;
    }
    return 2;
  };
}

}  // namespace hone::cli
