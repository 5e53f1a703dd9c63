#include "measure/server_executor.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <regex>
#include <set>

#include "bench/logprobs.h"
#include "bench/replay.h"
#include "bench/result_io.h"
#include "bench/runner.h"
#include "bench/workload.h"
#include "core/rng.h"
#include "core/strings.h"
#include "model/gguf.h"
#include "net/http.h"
#include "net/raw_server.h"
#include "sys/clock.h"
#include "sys/files.h"
#include "sys/process.h"
#include "sys/signals.h"
#include "sys/term.h"
#include "target/server.h"

namespace hone::measure {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

fs::path AccuracyDir(const std::string& run_dir) { return fs::path(run_dir) / "accuracy"; }

namespace {

// Test runs only: applies a chaos plan's faults to one trial, and notes in the
// outcome what was injected (nothing happens without a plan).
class ChaosHooks {
 public:
  ChaosHooks(const chaos::TrialFaults& f, TrialOutcome& o) : f_(f), o_(o) {}
  ~ChaosHooks() { AfterBench(); }
  ChaosHooks(const ChaosHooks&) = delete;
  ChaosHooks& operator=(const ChaosHooks&) = delete;

  Status BeforeLaunch(target::LaunchContext& lc, target::ServerOptions& options) {
    if (f_.server == chaos::ServerFaultKind::kOomAtLaunch) {
      HONE_ASSIGN_OR_RETURN(lc.server_binary, chaos::WriteOomStandIn(o_.dir));
      Note(1);
    }
    if (f_.server == chaos::ServerFaultKind::kPortTaken) {
      // Another process takes the port between the check and the bind, and answers
      // /health as if it were the server.
      options.before_launch = [this](int port) {
        if (squatter_) return;
        auto s = net::RawServer::Start(
            [](const net::RawRequest&, net::RawWriter& w) {
              w.Write("HTTP/1.1 200 OK\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{\"status\":\"ok\"}");
            },
            port);
        if (s) {
          squatter_ = std::move(*s);
          Note(1);
        }
      };
    }
    return Ok();
  }

  // The port the benchmark talks to: the server's, or the fault proxy's in front of it.
  Result<int> BeforeBench(target::Server& server) {
    int port = server.port();
    if (f_.proxy.kind != chaos::ProxyFaultKind::kNone) {
      HONE_ASSIGN_OR_RETURN(proxy_, chaos::FaultProxy::Start(port, f_.proxy));
      port = proxy_->port();
    }
    if (f_.server == chaos::ServerFaultKind::kKill || f_.server == chaos::ServerFaultKind::kStop) {
      // The signal goes out when the benchmark sends its at_request-th completion
      // request: through a pass-through proxy, so the moment does not depend on speed.
      const int sig = f_.server == chaos::ServerFaultKind::kKill ? SIGKILL : SIGSTOP;
      const pid_t pid = server.pid();
      HONE_ASSIGN_OR_RETURN(proxy_, chaos::FaultProxy::Start(port, {}, [this, pid, sig](int index) {
                              if (index == f_.at_request && sys::SignalGroup(pid, sig)) fired_ = true;
                            }));
      port = proxy_->port();
    }
    return port;
  }

  void AfterBench() {
    if (proxy_) {
      Note(proxy_->injected() + (fired_.exchange(false) ? 1 : 0));
      proxy_.reset();
    }
    squatter_.reset();
  }

 private:
  void Note(int n) {
    count_ += n;
    if (count_ > 0) o_.injected = f_.name + " x" + std::to_string(count_);
  }

  const chaos::TrialFaults f_;
  TrialOutcome& o_;
  int count_ = 0;
  std::unique_ptr<chaos::FaultProxy> proxy_;
  std::unique_ptr<net::RawServer> squatter_;
  std::atomic<bool> fired_{false};
};

}  // namespace

ServerTrialExecutor::ServerTrialExecutor(ExecutorSetup setup)
    : s_(std::move(setup)),
      clock_(s_.clock != nullptr ? *s_.clock : sys::DefaultClock()),
      runner_(s_.runner != nullptr ? *s_.runner : sys::DefaultProcessRunner()) {}

Result<TrialOutcome> ServerTrialExecutor::Run(const TrialRequest& req) {
  if (sys::InterruptRequested()) return Cancelled("interrupted");
  TrialOutcome o;
  o.id = req.id;
  o.role = req.role;
  o.config = req.config;
  o.point = req.point;
  o.retry_of = req.retry_of;
  o.dir = (fs::path(s_.run_dir) / "trials" / req.id).string();
  o.start_unix_us = clock_.WallMicros();
  HONE_TRY(sys::EnsureDir(o.dir));
  int64_t t0 = clock_.MonoNanos();
  auto finish = [&]() -> Result<TrialOutcome> {
    o.wall_s = static_cast<double>(clock_.MonoNanos() - t0) * 1e-9;
    HONE_TRY(WriteTrialOutcome(o));
    return o;
  };
  // A trial stopped by an interrupt or the session's deadline is no measurement, but
  // its directory says what happened (the requests it finished are kept beside it).
  auto cut = [&](Error why) -> Result<TrialOutcome> {
    o.failure_kind = "cut";
    o.failure_detail = std::string(sys::InterruptSignal() != 0 ? "interrupted" : sys::DeadlinePassed()
                                                                                    ? "the session's deadline came"
                                                                                    : "stopped") +
                       " before the trial finished";
    o.valid = false;
    o.invalid_reasons = {o.failure_detail};
    if (Result<TrialOutcome> written = finish(); !written) return Fail(written.error());
    return Fail(std::move(why));
  };
  json cfg = json::object();
  for (const auto& [k, v] : req.config.values()) cfg[k] = v;
  HONE_TRY(sys::WriteFileAtomic(fs::path(o.dir) / "config.json",
                                json{{"id", req.id}, {"role", TrialRoleName(req.role)}, {"config", cfg}, {"point", req.point.Label()}}
                                        .dump(2) + "\n"));
  auto model = s_.models->Resolve(req.config);
  auto launch = model ? s_.models->LaunchConfig(req.config) : Result<Config>(Fail(model.error()));
  if (!model || !launch) {
    o.failure_kind = "artifact";
    o.failure_detail = !model ? model.error().message : launch.error().message;
    return finish();
  }
  const spec::SessionSpec& spec = s_.spec;
  target::LaunchContext lc{.server_binary = req.server_binary.empty() ? s_.server_binary : req.server_binary,
                           .model_path = *model, .extra_args = spec.target.server_args};
  target::ServerOptions server_options{
      .log_path = (fs::path(o.dir) / "server.log").string(),
      .health_timeout = std::chrono::milliseconds(static_cast<int64_t>(spec.measurement.health_timeout_s * 1000))};
  // Test runs only: the chaos plan's faults for this trial.
  chaos::TrialFaults faults = s_.faults ? s_.faults->For(req.id, std::string(TrialRoleName(req.role))) : chaos::TrialFaults{};
  ChaosHooks hooks(faults, o);
  HONE_TRY(hooks.BeforeLaunch(lc, server_options));
  auto server = target::StartServer(*s_.adapter, *launch, lc, server_options);
  if (!server) {
    if (server.error().code == ErrorCode::kCancelled) return cut(server.error());
    o.failure_kind = std::string(server.error().Get("failure_kind"));
    if (o.failure_kind.empty()) o.failure_kind = "launch_error";
    o.failure_detail = server.error().message;
    if (auto excerpt = server.error().Get("log_excerpt"); !excerpt.empty()) o.failure_detail += " | " + std::string(excerpt);
    return finish();
  }
  o.launched = true;
  o.server_pid = (*server)->pid();
  o.relaunches = (*server)->relaunches();
  o.startup_s = (*server)->startup_seconds();
  o.command = (*server)->spec().ShellCommand();
  HONE_TRY(sys::WriteFileAtomic(fs::path(o.dir) / "command.txt", o.command + "\n"));

  bench::RunOptions run;
  run.port = (*server)->port();
  run.profile = s_.profile;
  run.progress = false;
  run.seed = spec.workload.seed;
  auto shape = bench::LoadShape::Parse(spec.workload.load, req.point.concurrency);
  if (!shape) return Fail(shape.error());
  run.shape = *shape;
  run.limits.idle_timeout = std::chrono::milliseconds(static_cast<int64_t>(spec.measurement.request_timeout_s * 1000));
  HONE_ASSIGN_OR_RETURN(run.port, hooks.BeforeBench(**server));
  bench::RunContext ctx;
  ctx.framework = s_.adapter->name();
  ctx.model = spec.target.model.Describe();
  ctx.load = shape->ToString();
  ctx.concurrency = req.point.concurrency;
  ctx.seed = spec.workload.seed;
  ctx.num_gpus = std::max(1, spec.target.num_gpus);
  ctx.hardware = s_.hardware;
  ctx.precision = req.config.GetOr("weights", "source");
  ctx.tool_version = "hone";
  ctx.start_unix_us = clock_.WallMicros();
  Result<bench::RunOutput> out = Internal("not run");
  if (spec.workload.kind == "agentic") {
    ctx.kind = "agentic";
    bench::AgenticOptions ag;
    ag.endpoint = spec.workload.endpoint == "completions" ? bench::Endpoint::kCompletions : bench::Endpoint::kChat;
    ctx.endpoint = std::string(bench::EndpointPath(ag.endpoint));
    ctx.trace = spec.workload.trace.empty() ? "generated:" + spec.workload.trace_preset : spec.workload.trace;
    ag.concurrency = req.point.concurrency;
    ag.duration_s = spec.workload.duration_s;
    ag.seed = spec.workload.seed;
    ag.think_scale = spec.workload.think_scale;
    PrepareTokens((*server)->host(), (*server)->port(), *model);
    ag.tokens = tokens_ ? &*tokens_ : nullptr;
    ctx.token_sizing = tokens_ ? tokens_->source : tokens_note_;
    if (auto limits = bench::ProbeServerLimits((*server)->host(), (*server)->port(), s_.profile)) {
      run.slot_context = limits->slot_context;
    }
    out = bench::RunAgentic(s_.traces, ag, run);
  } else {
    bench::FixedWorkloadSpec w;
    w.endpoint = spec.workload.endpoint == "chat" ? bench::Endpoint::kChat : bench::Endpoint::kCompletions;
    w.isl = req.point.isl;
    w.osl = req.point.osl;
    w.range_ratio = spec.workload.range_ratio;
    w.semantics = spec.workload.range_semantics == "inferencex" ? bench::RangeSemantics::kInferenceX
                                                                : bench::RangeSemantics::kVllm;
    w.num_prompts = spec.workload.num_prompts;
    w.num_warmups = spec.workload.warmups;
    if (spec.workload.window_s > 0) {
      // A measurement window: the pool must outlast it at this concurrency.
      run.duration_s = spec.workload.window_s;
      run.cut_at_window_end = true;
      run.ramp_s = spec.workload.ramp_s;
    }
    w.seed = spec.workload.seed;
    ctx.endpoint = std::string(bench::EndpointPath(w.endpoint));
    ctx.isl = w.isl;
    ctx.osl = w.osl;
    ctx.range_ratio = w.range_ratio;
    ctx.range_semantics = std::string(bench::RangeSemanticsName(w.semantics));
    ctx.num_prompts = w.num_prompts;
    ctx.num_warmups = w.num_warmups;
    out = bench::RunRequests(bench::GenerateFixed(w), run);
  }
  hooks.AfterBench();
  // A server that died during the benchmark (crashed, or was killed) is a fault even
  // when every request happened to finish.
  std::string died;
  if (!(*server)->Alive()) died = "server_exited (" + (*server)->Stop().ToString() + ")";
  (*server)->Stop();
  if (!out) return Fail(out.error());
  if (out->interrupted) {
    HONE_TRY(bench::WriteRecordsJsonl((fs::path(o.dir) / "records.jsonl").string(), out->records));
    return cut(Cancelled("interrupted during a trial").error());
  }
  o.result = bench::ComputeResult(
      *out, ctx, {spec.objective.good_ttft_ms, spec.objective.good_tpot_ms, spec.objective.good_e2el_ms},
      s_.profile.metrics);
  o.faults = FaultsOf(o.result);
  if (!died.empty()) o.faults.push_back(died);
  HONE_TRY(bench::WriteResultJson((fs::path(o.dir) / "result.json").string(), o.result));
  HONE_TRY(bench::WriteRecordsJsonl((fs::path(o.dir) / "records.jsonl").string(), out->records));
  o.valid = o.result.valid && o.faults.empty();
  o.invalid_reasons = o.result.invalid_reasons;
  if (!o.faults.empty()) o.invalid_reasons.insert(o.invalid_reasons.begin(), "faulted: " + Join(o.faults, ", "));
  o.error_rate = o.result.total > 0 ? static_cast<double>(o.result.failed) / o.result.total : 0;
  ObjectiveCheck check = EvaluateObjective(o.result, spec.objective);
  o.objective = check.value;
  o.slo_ok = check.slo_ok;
  o.slo_violations = check.violations;
  if (!check.available) {
    o.valid = false;
    o.invalid_reasons.push_back("objective " + spec.objective.metric + " unavailable in this run");
  }
  return finish();
}

void ServerTrialExecutor::PrepareTokens(const std::string& host, int port, const std::string& model_path) {
  if (tokens_ || !tokens_note_.empty()) return;
  bench::CalibrationOptions o;
  o.host = host;
  o.port = port;
  o.profile = s_.profile;
  o.cache_dir = s_.token_cache_dir.empty() ? (fs::path(s_.run_dir) / "tokens").string() : s_.token_cache_dir;
  if (auto vocab = model::ReadGgufVocab(model_path)) {
    o.vocab_pieces = std::move(vocab->pieces);
    o.vocab_model = vocab->model;
  }
  auto plan = bench::CalibrateTokens(o);
  if (plan) {
    tokens_ = std::move(*plan);
  } else {
    // The replay still runs, sized by words; the result says so.
    tokens_note_ = "tokens-per-word (no token plan: " + plan.error().message + ")";
    sys::LogWarn("agentic payloads are approximate: " + plan.error().message);
  }
}

namespace {

using Top = bench::TopLogprobs;
constexpr int kTopLogprobs = 8;

json TopJson(const std::vector<Top>& top) {
  json out = json::array();
  for (const Top& t : top) {
    json pos = json::array();
    for (const auto& [id, lp] : t) pos.push_back({id, lp});
    out.push_back(std::move(pos));
  }
  return out;
}

std::vector<Top> TopFromJson(const json& j) {
  std::vector<Top> out;
  if (!j.is_array()) return out;
  for (const json& pos : j) {
    Top t;
    for (const json& e : pos) {
      if (e.is_array() && e.size() == 2) t[e[0].get<int32_t>()] = e[1].get<double>();
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

Result<ServerTrialExecutor::Reply> ServerTrialExecutor::Greedy(const std::string& host, int port,
                                                               const std::vector<int32_t>& prompt, int n) {
  bool native = s_.adapter->name() == "llama.cpp";
  json body = {{"prompt", prompt}, {"temperature", 0}, {"ignore_eos", true}, {"n_probs", kTopLogprobs}};
  if (native) {
    // llama-server's own endpoint: the tokens and, per token, its top-k logprobs.
    body["n_predict"] = n;
    body["return_tokens"] = true;
  } else {
    // The OpenAI completions API: top-k logprobs (llama-server reads n_probs), with
    // token ids where the engine can give them (vLLM: return_tokens_as_token_ids).
    body["max_tokens"] = n;
    body["logprobs"] = kTopLogprobs;
    body["return_tokens_as_token_ids"] = true;
  }
  HONE_ASSIGN_OR_RETURN(auto r, net::PostJson(host, port, native ? "/completion" : "/v1/completions", body.dump(), 120s));
  if (r.status != 200) return Unavailable("accuracy probe: HTTP " + std::to_string(r.status) + ": " + r.body.substr(0, 200));
  json j = json::parse(r.body, nullptr, false);
  if (j.is_discarded()) return DataLoss("accuracy probe: invalid JSON response");
  Reply reply;
  if (native && j.contains("completion_probabilities") && j["completion_probabilities"].is_array()) {
    if (auto lp = bench::ParseCompletionLogprobs(json{{"content", j["completion_probabilities"]}})) {
      reply.tokens = std::move(lp->tokens);
      reply.top = std::move(lp->top);
      reply.ids = true;
      return reply;
    }
  }
  if (native && j.contains("tokens") && j["tokens"].is_array()) {
    for (const auto& t : j["tokens"]) reply.tokens.push_back(t.get<int32_t>());
    reply.ids = true;
    return reply;
  }
  const bool has_choice = j.contains("choices") && j["choices"].is_array() && !j["choices"].empty();
  if (has_choice && j["choices"][0].contains("logprobs")) {
    if (auto lp = bench::ParseCompletionLogprobs(j["choices"][0]["logprobs"])) {
      reply.tokens = std::move(lp->tokens);
      reply.top = std::move(lp->top);
      reply.ids = true;
      return reply;
    }
  }
  // No token ids: compare texts, hashed to one id.
  std::string text = has_choice ? j["choices"][0].value("text", "") : j.value("content", "");
  reply.tokens.push_back(static_cast<int32_t>(std::hash<std::string>{}(text) & 0x7fffffff));
  return reply;
}

Result<std::vector<int32_t>> ServerTrialExecutor::Tokenize(const std::string& host, int port, const std::string& text) {
  // llama-server reads "content", vLLM and SGLang "prompt"; each ignores the other.
  json body = {{"content", text}, {"prompt", text}, {"add_special", false}, {"add_special_tokens", false}};
  HONE_ASSIGN_OR_RETURN(auto r, net::PostJson(host, port, "/tokenize", body.dump(), 60s));
  if (r.status != 200) return Unavailable("/tokenize: HTTP " + std::to_string(r.status));
  json j = json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.contains("tokens") || !j["tokens"].is_array()) {
    return DataLoss("/tokenize: no token list in the answer");
  }
  std::vector<int32_t> out;
  for (const json& t : j["tokens"]) {
    if (t.is_number_integer()) out.push_back(t.get<int32_t>());
    else if (t.is_object() && t.contains("id")) out.push_back(t["id"].get<int32_t>());
  }
  return out;
}

bool ServerTrialExecutor::Patched(const std::string& server_binary) const {
  return !server_binary.empty() && server_binary != s_.server_binary;
}

bool ServerTrialExecutor::NeedsKld(const Config& config, const std::string& server_binary) const {
  if (!s_.spec.accuracy.kld || s_.adapter->name() != "llama.cpp") return false;
  if (PerplexityFor(server_binary).empty()) return false;
  // A patched build is new code: its own llama-perplexity is compared with the stock's.
  if (Patched(server_binary)) return true;
  for (const auto& [k, v] : config.values()) {
    const target::Knob* knob = s_.adapter->catalog().Find(k);
    if (knob && target::ChangesNumerics(knob->accuracy_risk) && v != knob->default_value) {
      return true;
    }
  }
  return false;
}

std::string ServerTrialExecutor::PerplexityFor(const std::string& server_binary) const {
  if (!Patched(server_binary)) return s_.perplexity_binary;
  // A patched build (the patch lane builds llama-perplexity next to llama-server).
  fs::path own = fs::path(server_binary).parent_path() / "llama-perplexity";
  return sys::FileExists(own.string()) ? own.string() : std::string();
}

std::vector<std::string> ServerTrialExecutor::RuntimeFlags(const Config& config) const {
  // Knobs that change numerics and that llama-perplexity shares with the server.
  std::vector<std::string> out;
  for (const auto& [k, v] : config.values()) {
    const target::Knob* knob = s_.adapter->catalog().Find(k);
    if (!knob || knob->artifact || knob->flag.empty()) continue;
    if (k != "cache_type_k" && k != "cache_type_v" && k != "flash_attn" && k != "threads") continue;
    out.push_back(knob->flag);
    out.push_back(v);
  }
  return out;
}

Result<KldStats> ServerTrialExecutor::RunKld(const Config& config, bool make_base,
                                                                  const std::string& server_binary) {
  HONE_ASSIGN_OR_RETURN(std::string model, s_.models->Resolve(config));
  const std::string binary = make_base ? s_.perplexity_binary : PerplexityFor(server_binary);
  std::vector<std::string> argv = {binary, "-m", model, "-c", "128", "-b", "128", "--kl-divergence-base", kld_base_};
  if (make_base) {
    argv.push_back("-f");
    argv.push_back(s_.perplexity_text);
  } else {
    argv.push_back("--kl-divergence");
  }
  for (const auto& f : RuntimeFlags(config)) argv.push_back(f);
  // llama-perplexity logs through a worker thread that its exit does not wait for: on a
  // loaded machine the last lines, the statistics, are sometimes lost from a run that
  // finished (exit 0). The statistics are deterministic, so such a run is repeated.
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    HONE_ASSIGN_OR_RETURN(auto res, runner_.Run({.argv = argv}, 20min));
    if (!res.status.success()) {
      return Fail(Error{ErrorCode::kFailedPrecondition, "llama-perplexity failed (" + res.status.ToString() + ")",
                        {{"output_tail", LastLines(res.output, 5)}}});
    }
    if (make_base) {
      // A text too short for the context ends the tool with exit 0 and no base.
      std::error_code ec;
      if (fs::file_size(kld_base_, ec) == 0 || ec) {
        return Fail(Error{ErrorCode::kFailedPrecondition,
                          "llama-perplexity wrote no KL-divergence base: ..." + LastLines(res.output, 4),
                          {{"output_tail", LastLines(res.output, 20)}}});
      }
      return KldStats{};
    }
    auto stats = ParseKlDivergenceOutput(res.output);
    if (stats) return stats;
    if (attempt == kAttempts) {
      return Fail(Error{stats.error().code,
                        stats.error().message + " in " + std::to_string(kAttempts) + " runs: ..." +
                            LastLines(res.output, 4),
                        {{"output_tail", LastLines(res.output, 20)}}});
    }
  }
}

Result<ServerTrialExecutor::Comparison> ServerTrialExecutor::Compare(const Config& config, const std::string& label,
                                                                     const std::string& server_binary) {
  fs::path dir = AccuracyDir(s_.run_dir);
  HONE_ASSIGN_OR_RETURN(std::string model, s_.models->Resolve(config));
  target::LaunchContext lc{.server_binary = server_binary.empty() ? s_.server_binary : server_binary,
                           .model_path = model, .extra_args = s_.spec.target.server_args};
  HONE_ASSIGN_OR_RETURN(Config launch, s_.models->LaunchConfig(config));
  HONE_ASSIGN_OR_RETURN(auto server, target::StartServer(*s_.adapter, launch, lc,
                                                         {.log_path = (dir / (label + "-server.log")).string()}));
  Comparison t;
  double kl_sum = 0;
  for (const Probe& p : probes_) {
    const size_t n = p.reference.size();
    size_t pos = 0;
    // Teacher forcing: the candidate continues the reference's prefix; while it agrees
    // one request covers many positions, after a disagreement it restarts from the
    // reference's next prefix. Every reference position is compared once.
    while (pos < n) {
      std::vector<int32_t> prompt = p.prompt;
      prompt.insert(prompt.end(), p.reference.begin(), p.reference.begin() + static_cast<std::ptrdiff_t>(pos));
      HONE_ASSIGN_OR_RETURN(Reply got, Greedy(server->host(), server->port(), prompt, static_cast<int>(n - pos)));
      if (!got.ids) {
        // Texts only: the reference is the first token's text (one position a probe).
        HONE_ASSIGN_OR_RETURN(got, Greedy(server->host(), server->port(), p.prompt, 1));
        t.by_text = true;
        ++t.compared;
        t.matched += !got.tokens.empty() && got.tokens[0] == p.reference[0];
        break;
      }
      size_t k = 0;
      bool diverged = false;
      for (; k < got.tokens.size() && pos + k < n; ++k) {
        const size_t at = pos + k;
        ++t.compared;
        if (at < p.top.size() && !p.top[at].empty() && k < got.top.size() && !got.top[k].empty()) {
          kl_sum += bench::KlEstimate(p.top[at], got.top[k]);
          ++t.kl_positions;
        }
        if (got.tokens[k] != p.reference[at]) {
          diverged = true;
          break;
        }
        ++t.matched;
      }
      if (diverged) {
        pos += k + 1;
      } else if (k == 0) {
        ++t.compared;  // an empty answer: the position counts as a disagreement
        ++pos;
      } else {
        pos += k;
      }
    }
  }
  server->Stop();
  t.agreement = t.compared ? static_cast<double>(t.matched) / t.compared : 1.0;
  if (t.kl_positions > 0) t.kl_estimate = kl_sum / t.kl_positions;
  return t;
}

std::string ServerTrialExecutor::MethodName(const Comparison& c) const {
  if (c.by_text) return "first greedy token's text (the engine gave no token ids)";
  if (c.kl_positions > 0) return "teacher-forced greedy tokens with top-" + std::to_string(kTopLogprobs) + " logprobs";
  return "teacher-forced greedy tokens (no logprobs)";
}

AccuracyGateInfo GateThresholds(const spec::AccuracySpec& a, AccuracyGateInfo gate) {
  gate.min_agreement = a.min_token_agreement;
  gate.max_kld = a.max_kld;
  gate.max_ppl_delta = a.max_ppl_delta;
  gate.nondeterministic = gate.aa_ran && (gate.aa_agreement < 1.0 || gate.aa_kl.value_or(0) > 1e-6);
  if (!gate.nondeterministic) return gate;
  // The stock disagrees with itself: a candidate is held to what a restart of the
  // stock achieves, not blamed for the engine's nondeterminism.
  gate.min_agreement = std::min(a.min_token_agreement, std::max(0.0, gate.aa_agreement - 0.05));
  if (gate.aa_kl) gate.max_kld = std::max(a.max_kld, 2 * *gate.aa_kl);
  char buf[300];
  std::snprintf(buf, sizeof buf,
                "the stock's greedy outputs differ across restarts (A/A agreement %.1f%%, KL %.3g): thresholds "
                "widened to min agreement %.1f%%, max KL %.3g",
                gate.aa_agreement * 100, gate.aa_kl.value_or(0), gate.min_agreement * 100, gate.max_kld);
  gate.note = buf;
  return gate;
}

Status ServerTrialExecutor::PrepareAccuracy(const Config& stock) {
  const spec::AccuracySpec& a = s_.spec.accuracy;
  if (!a.enabled) return Ok();
  fs::path dir = AccuracyDir(s_.run_dir);
  HONE_TRY(sys::EnsureDir(dir));
  fs::path ref = dir / "reference.json";
  kld_base_ = (dir / "reference.kld").string();
  if (!probes_.empty()) return Ok();  // the first reference prepared stays the session's
  stock_ = stock;
  json saved;
  if (sys::FileExists(ref)) {  // resume: the reference is kept
    HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(ref));
    saved = json::parse(text, nullptr, false);
    if (!saved.is_discarded()) {
      for (const auto& p : saved["probes"]) {
        probes_.push_back({p["prompt"].get<std::vector<int32_t>>(), p["reference"].get<std::vector<int32_t>>(),
                           TopFromJson(p.value("top", json::array()))});
      }
    }
  }
  if (probes_.empty()) {
    HONE_ASSIGN_OR_RETURN(std::string model, s_.models->Resolve(stock));
    target::LaunchContext lc{.server_binary = s_.server_binary, .model_path = model,
                             .extra_args = s_.spec.target.server_args};
    HONE_ASSIGN_OR_RETURN(Config stock_launch, s_.models->LaunchConfig(stock));
    HONE_ASSIGN_OR_RETURN(auto server, target::StartServer(*s_.adapter, stock_launch, lc,
                                                           {.log_path = (dir / "reference-server.log").string()}));
    constexpr size_t kPromptTokens = 32;
    // Text-like prompts: windows of a fixed text, in the served model's own tokens.
    std::vector<int32_t> text_tokens;
    std::string source;
    const size_t probes = static_cast<size_t>(a.probes);
    if (auto text = sys::ReadFile(s_.perplexity_text); !text) {
      source = "random token ids (no text: " + text.error().message + ")";
    } else if (auto tokens = Tokenize(server->host(), server->port(), *text); !tokens) {
      source = "random token ids (" + tokens.error().message + ")";
    } else if (tokens->size() < kPromptTokens + probes) {
      source = "random token ids (the text is only " + std::to_string(tokens->size()) + " tokens)";
    } else {
      text_tokens = std::move(*tokens);
      source = "windows of a fixed text (" + std::to_string(text_tokens.size()) + " tokens, tokenized by the server)";
    }
    Rng rng(s_.spec.workload.seed ^ 0xacc);
    json out = {{"probes", json::array()}, {"source", source}};
    for (size_t i = 0; i < probes; ++i) {
      Probe p;
      if (!text_tokens.empty()) {
        const size_t stride = (text_tokens.size() - kPromptTokens) / probes;
        auto begin = text_tokens.begin() + static_cast<std::ptrdiff_t>(i * stride);
        p.prompt.assign(begin, begin + kPromptTokens);
      } else {
        for (size_t k = 0; k < kPromptTokens; ++k) p.prompt.push_back(static_cast<int32_t>(rng.Uniform(1000, 30999)));
      }
      HONE_ASSIGN_OR_RETURN(Reply reply, Greedy(server->host(), server->port(), p.prompt, a.probe_tokens));
      if (!reply.ids) {
        // Texts only: the reference is the first token's text, as the check compares it.
        HONE_ASSIGN_OR_RETURN(reply, Greedy(server->host(), server->port(), p.prompt, 1));
      }
      p.reference = reply.tokens;
      p.top = reply.top;
      out["probes"].push_back({{"prompt", p.prompt}, {"reference", p.reference}, {"top", TopJson(p.top)}});
      probes_.push_back(std::move(p));
    }
    server->Stop();
    HONE_TRY(sys::WriteFileAtomic(ref, out.dump() + "\n"));
    saved = std::move(out);
    if (a.aa) {
      // A/A: the stock again on a fresh server; what it achieves against its own
      // reference is the spread every candidate is judged against.
      auto aa = Compare(stock, "aa-stock", "");
      if (aa) {
        saved["aa"] = {{"agreement", aa->agreement}, {"positions", aa->compared},
                       {"kl", aa->kl_estimate ? json(*aa->kl_estimate) : json(nullptr)},
                       {"method", MethodName(*aa)}};
      } else if (aa.error().code == ErrorCode::kCancelled) {
        return Fail(aa.error());
      } else {
        saved["aa_error"] = aa.error().message;
      }
      HONE_TRY(sys::WriteFileAtomic(ref, saved.dump() + "\n"));
    }
  }
  gate_ = {};
  gate_.prepared = true;
  gate_.probes = saved.value("source", "random token ids");
  for (const Probe& p : probes_) gate_.positions += static_cast<int>(p.reference.size());
  if (saved.contains("aa") && saved["aa"].is_object()) {
    const json& aa = saved["aa"];
    gate_.aa_ran = true;
    gate_.aa_agreement = aa.value("agreement", 1.0);
    gate_.aa_positions = aa.value("positions", 0);
    if (aa.contains("kl") && aa["kl"].is_number()) gate_.aa_kl = aa["kl"].get<double>();
    gate_.method = aa.value("method", "");
  } else {
    gate_.note = saved.contains("aa_error") ? "A/A not measured: " + saved.value("aa_error", "")
                                            : "A/A not measured (accuracy.aa: false)";
  }
  gate_.kld_tool = a.kld && s_.adapter->name() == "llama.cpp" && !s_.perplexity_binary.empty();
  gate_ = GateThresholds(a, std::move(gate_));
  if (gate_.kld_tool && !sys::FileExists(kld_base_)) {
    HONE_TRY(RunKld(stock, /*make_base=*/true, ""));
  }
  return Ok();
}

Result<AccuracyOutcome> ServerTrialExecutor::CheckAccuracy(const Config& config, const std::string& label,
                                                           const std::string& server_binary) {
  const spec::AccuracySpec& a = s_.spec.accuracy;
  AccuracyOutcome out;
  if (!a.enabled) return out;
  if (probes_.empty()) {
    // No reference to compare with: it could not be made, or it was never loaded (a
    // resumed session that skipped PrepareAccuracy used to pass every change here,
    // unchecked). A change that can alter the outputs is not kept unchecked.
    out.passed = !Patched(server_binary) && !s_.adapter->catalog().ChangesNumerics(config);
    out.detail = out.passed ? "not checked: no accuracy reference (the change leaves the numerics alone)"
                            : "not checked: no accuracy reference, and the change can alter the outputs";
    return out;
  }
  // A patched binary is a different program: its own cache entry.
  const std::string key = server_binary.empty() ? config.Hash() : config.Hash() + "-" + StableHash(server_binary).substr(0, 8);
  if (auto it = accuracy_cache_.find(key); it != accuracy_cache_.end()) return it->second;
  fs::path dir = AccuracyDir(s_.run_dir);
  fs::path cached = dir / (key + ".json");
  auto opt = [](const json& j, const char* name) -> std::optional<double> {
    if (j.contains(name) && j[name].is_number()) return j[name].get<double>();
    return std::nullopt;
  };
  if (sys::FileExists(cached)) {
    HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(cached));
    json j = json::parse(text, nullptr, false);
    if (!j.is_discarded()) {
      out.ran = true;
      out.passed = j.value("passed", false);
      out.token_agreement = j.value("token_agreement", 0.0);
      out.probes_compared = j.value("probes_compared", 0);
      out.kld_mean = opt(j, "kld_mean");
      out.same_top = opt(j, "same_top");
      out.kl_estimate = opt(j, "kl_estimate");
      out.kl_positions = j.value("kl_positions", 0);
      out.ppl_ratio = opt(j, "ppl_ratio");
      out.detail = j.value("detail", "");
      accuracy_cache_[key] = out;
      return out;
    }
  }
  HONE_ASSIGN_OR_RETURN(Comparison c, Compare(config, label, server_binary));
  out.ran = true;
  out.probes_compared = c.compared;
  out.token_agreement = c.agreement;
  out.kl_estimate = c.kl_estimate;
  out.kl_positions = c.kl_positions;
  out.passed = out.token_agreement >= gate_.min_agreement;
  char buf[240];
  std::snprintf(buf, sizeof buf, ": token agreement %.1f%% (%d/%d, min %.0f%%)", out.token_agreement * 100, c.matched,
                c.compared, gate_.min_agreement * 100);
  out.detail = MethodName(c) + buf;
  // Changes of medium or high accuracy risk are gated on the KL divergence: the full
  // one from llama-perplexity where it runs, else the estimate from the top-k lists.
  const bool risky = Patched(server_binary) || s_.adapter->catalog().ChangesNumerics(config);
  const bool tool = NeedsKld(config, server_binary);
  if (c.kl_estimate) {
    const bool gated = a.kld && risky && !tool;
    if (gated) out.kld_mean = c.kl_estimate;
    if (gated) out.passed = out.passed && *c.kl_estimate <= gate_.max_kld;
    std::snprintf(buf, sizeof buf, "; KL estimate %.3g over %d positions%s", *c.kl_estimate, c.kl_positions,
                  gated ? "" : tool ? " (llama-perplexity gates)" : " (not gated: no numerics change)");
    out.detail += buf;
    if (gated) {
      std::snprintf(buf, sizeof buf, " (max %g)", gate_.max_kld);
      out.detail += buf;
    }
  }
  if (tool) {
    HONE_ASSIGN_OR_RETURN(KldStats kld, RunKld(config, false, server_binary));
    out.kld_mean = kld.kld;
    out.same_top = kld.same_top;
    std::optional<double> stock_ratio;  // divided out of the candidate's ratio when positive
    if (kld.ppl_ratio) {
      HONE_ASSIGN_OR_RETURN(stock_ratio, StockPplRatio());
      if (!(stock_ratio && *stock_ratio > 0)) stock_ratio.reset();
      if (stock_ratio) kld.ppl_ratio = *kld.ppl_ratio / *stock_ratio;
    }
    out.ppl_ratio = kld.ppl_ratio;
    const bool kld_ok = kld.kld <= gate_.max_kld;
    const bool ppl_ok = !kld.ppl_ratio || std::abs(*kld.ppl_ratio - 1) <= gate_.max_ppl_delta;
    out.passed = out.passed && kld_ok && ppl_ok;
    std::snprintf(buf, sizeof buf, "; KLD %.5f (max %.5f), same top token %.1f%%", kld.kld, gate_.max_kld,
                  kld.same_top);
    out.detail += buf;
    if (kld.ppl_ratio) {
      std::snprintf(buf, sizeof buf, ", PPL ratio %.4f (max delta %.3g)", *kld.ppl_ratio, gate_.max_ppl_delta);
      out.detail += buf;
      if (stock_ratio) {
        std::snprintf(buf, sizeof buf, " over the stock's (the base file's own ratio %.4g divided out)", *stock_ratio);
        out.detail += buf;
      }
    }
    if (Patched(server_binary)) out.detail += " (the patched build's llama-perplexity)";
  }
  json j = {{"passed", out.passed}, {"token_agreement", out.token_agreement}, {"probes_compared", c.compared},
            {"kld_mean", out.kld_mean ? json(*out.kld_mean) : json(nullptr)},
            {"same_top", out.same_top ? json(*out.same_top) : json(nullptr)},
            {"kl_estimate", out.kl_estimate ? json(*out.kl_estimate) : json(nullptr)},
            {"kl_positions", out.kl_positions},
            {"ppl_ratio", out.ppl_ratio ? json(*out.ppl_ratio) : json(nullptr)}, {"detail", out.detail},
            {"config", config.ToString()}};
  HONE_TRY(sys::WriteFileAtomic(cached, j.dump(2) + "\n"));
  accuracy_cache_[key] = out;
  return out;
}

Result<std::optional<double>> ServerTrialExecutor::StockPplRatio() {
  if (stock_ppl_ratio_) return *stock_ppl_ratio_;
  const fs::path file = AccuracyDir(s_.run_dir) / "reference-ppl.json";
  if (sys::FileExists(file)) {  // a resumed session: measured before
    HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(file));
    json j = json::parse(text, nullptr, false);
    if (j.is_object() && j.contains("stock_ppl_ratio")) {
      const json& r = j["stock_ppl_ratio"];
      stock_ppl_ratio_ = r.is_number() ? std::optional<double>(r.get<double>()) : std::nullopt;
      return *stock_ppl_ratio_;
    }
  }
  HONE_ASSIGN_OR_RETURN(KldStats self, RunKld(stock_, false, ""));
  HONE_TRY(sys::WriteFileAtomic(file, json{{"stock_ppl_ratio", self.ppl_ratio ? json(*self.ppl_ratio) : json(nullptr)},
                                           {"stock_kld", self.kld}}.dump(2) + "\n"));
  stock_ppl_ratio_ = self.ppl_ratio;
  return *stock_ppl_ratio_;
}

Result<KldStats> ParseKlDivergenceOutput(const std::string& output) {
  static const std::regex kld_re(R"(Mean\s+KLD:\s+([0-9.eE+-]+))");
  static const std::regex top_re(R"(Same top p:\s+([0-9.]+))");
  static const std::regex ppl_re(R"(Mean\s+PPL\(Q\)/PPL\(base\)\s*:\s*([0-9.eE+-]+))");
  std::smatch m1, m2, m3;
  if (!std::regex_search(output, m1, kld_re) || !std::regex_search(output, m2, top_re)) {
    return DataLoss("llama-perplexity printed no KL divergence statistics");
  }
  KldStats k;
  k.kld = ParseDouble(m1[1].str()).value_or(1e9);
  k.same_top = ParseDouble(m2[1].str()).value_or(0);
  if (std::regex_search(output, m3, ppl_re)) {
    if (auto r = ParseDouble(m3[1].str())) k.ppl_ratio = *r;
  }
  return k;
}

}  // namespace hone::measure
