#include "spec/session_spec.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/strings.h"
#include "spec/yaml.h"

namespace hone::spec {

std::string SloConstraint::ToString() const {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s %s %g", metric.c_str(), at_least ? ">=" : "<=", value);
  return buf;
}

Result<double> ParseDurationSeconds(const std::string& text) {
  std::string t(Trim(text));
  if (t.empty()) return InvalidArgument("empty duration");
  double scale = 1;
  char last = t.back();
  if (last == 's' || last == 'm' || last == 'h') {
    scale = last == 's' ? 1 : last == 'm' ? 60 : 3600;
    t.pop_back();
  }
  auto v = ParseDouble(t);
  if (!v || *v <= 0) return InvalidArgument("not a duration: '" + text + "' (e.g. 90s, 10m, 1.5h)");
  return *v * scale;
}

namespace {

Status CheckMetric(const Field& f, const std::string& metric, const std::vector<std::string>& known) {
  if (known.empty() || std::find(known.begin(), known.end(), metric) != known.end()) return Ok();
  return Fail(f.Err("unknown metric '" + metric + "' (known: " + Join(known, ", ") + ")"));
}

Status ParseTarget(const Field& f, TargetSpec& t) {
  HONE_TRY(f.RequireMap());
  HONE_TRY(f.CheckKeys({"adapter", "model", "server_args", "base_config", "command", "knobs", "version",
                        "health_path", "hardware", "num_gpus"}));
  HONE_ASSIGN_OR_RETURN(t.adapter, f["adapter"].StrOr("llama.cpp"));
  static const char* kAdapters[] = {"llama.cpp", "vllm", "sglang", "command"};
  if (std::find(std::begin(kAdapters), std::end(kAdapters), t.adapter) == std::end(kAdapters)) {
    return Fail(f["adapter"].Err("unknown adapter '" + t.adapter + "' (llama.cpp, vllm, sglang, command)"));
  }
  Field m = f["model"];
  if (!m.defined()) return Fail(m.Err("required field is missing (a path, or {preset: small})"));
  if (m.is_scalar()) {
    HONE_ASSIGN_OR_RETURN(t.model.path, m.Str());
  } else {
    HONE_TRY(m.CheckKeys({"path", "preset", "seed"}));
    HONE_ASSIGN_OR_RETURN(t.model.path, m["path"].StrOr(""));
    HONE_ASSIGN_OR_RETURN(t.model.preset, m["preset"].StrOr(""));
    HONE_ASSIGN_OR_RETURN(int64_t seed, m["seed"].IntOr(42, 0));
    t.model.seed = static_cast<uint64_t>(seed);
    if (t.model.path.empty() == t.model.preset.empty()) return Fail(m.Err("give exactly one of path or preset"));
  }
  HONE_ASSIGN_OR_RETURN(t.server_args, f["server_args"].StrList());
  for (const auto& [k, v] : f["base_config"].Entries()) {
    HONE_ASSIGN_OR_RETURN(std::string value, v.Str());
    t.base_config.Set(k, value);
  }
  HONE_ASSIGN_OR_RETURN(t.command, f["command"].StrList());
  if (t.adapter == "command" && t.command.empty()) return Fail(f["command"].Err("adapter 'command' needs a command"));
  if ((t.adapter == "vllm" || t.adapter == "sglang") && t.command.size() > 1) {
    return Fail(f["command"].Err("for " + t.adapter + ", command names one launcher (the `" +
                                 (t.adapter == "vllm" ? "vllm" : "python") + "` to use); put fixed flags in server_args"));
  }
  if (f["knobs"].defined()) {
    if (t.adapter != "command") return Fail(f["knobs"].Err("a knob table is for adapter 'command' (the others have catalogs)"));
    if (!f["knobs"].is_seq()) return Fail(f["knobs"].Err("expected a list of knobs ({name, flag|env, type, ...})"));
    YAML::Emitter out;
    out << f["knobs"].node();
    t.knobs_yaml = std::string(out.c_str()) + "\n";
  }
  HONE_ASSIGN_OR_RETURN(t.version, f["version"].StrOr(""));
  HONE_ASSIGN_OR_RETURN(t.health_path, f["health_path"].StrOr("/health"));
  HONE_ASSIGN_OR_RETURN(t.hardware, f["hardware"].StrOr(""));
  HONE_ASSIGN_OR_RETURN(int64_t gpus, f["num_gpus"].IntOr(0, 0, 1024));
  t.num_gpus = static_cast<int>(gpus);
  return Ok();
}

Status ParseWorkload(const Field& f, WorkloadSpec& w) {
  if (!f.defined()) return Ok();
  HONE_TRY(f.RequireMap());
  HONE_TRY(f.CheckKeys({"kind", "endpoint", "isl", "osl", "range_ratio", "range_semantics", "concurrency",
                        "num_prompts", "warmups", "load", "seed", "trace", "trace_preset", "trace_sessions",
                        "duration", "think_scale", "sweep", "window", "ramp"}));
  HONE_ASSIGN_OR_RETURN(w.kind, f["kind"].StrOr("fixed"));
  if (w.kind != "fixed" && w.kind != "agentic") return Fail(f["kind"].Err("must be fixed or agentic"));
  HONE_ASSIGN_OR_RETURN(w.endpoint, f["endpoint"].StrOr(w.kind == "agentic" ? "chat" : "completions"));
  if (w.endpoint != "completions" && w.endpoint != "chat") return Fail(f["endpoint"].Err("must be completions or chat"));
  HONE_ASSIGN_OR_RETURN(w.isl, f["isl"].IntOr(128, 1, 1 << 24));
  HONE_ASSIGN_OR_RETURN(w.osl, f["osl"].IntOr(32, 1, 1 << 24));
  HONE_ASSIGN_OR_RETURN(w.range_ratio, f["range_ratio"].DoubleOr(0, 0, 1));
  HONE_ASSIGN_OR_RETURN(w.range_semantics, f["range_semantics"].StrOr("vllm"));
  if (w.range_semantics != "vllm" && w.range_semantics != "inferencex") {
    return Fail(f["range_semantics"].Err("must be vllm or inferencex"));
  }
  HONE_ASSIGN_OR_RETURN(int64_t c, f["concurrency"].IntOr(2, 1, 100000));
  w.concurrency = static_cast<int>(c);
  HONE_ASSIGN_OR_RETURN(int64_t n, f["num_prompts"].IntOr(16, 1, 10000000));
  w.num_prompts = static_cast<int>(n);
  HONE_ASSIGN_OR_RETURN(int64_t wu, f["warmups"].IntOr(2, 0, 100000));
  w.warmups = static_cast<int>(wu);
  HONE_ASSIGN_OR_RETURN(w.load, f["load"].StrOr("closed"));
  HONE_ASSIGN_OR_RETURN(int64_t seed, f["seed"].IntOr(42, 0));
  w.seed = static_cast<uint64_t>(seed);
  HONE_ASSIGN_OR_RETURN(w.trace, f["trace"].StrOr(""));
  HONE_ASSIGN_OR_RETURN(w.trace_preset, f["trace_preset"].StrOr("cpu"));
  HONE_ASSIGN_OR_RETURN(int64_t ts, f["trace_sessions"].IntOr(8, 1, 100000));
  w.trace_sessions = static_cast<int>(ts);
  if (f["duration"].defined()) {
    HONE_ASSIGN_OR_RETURN(std::string d, f["duration"].Str());
    auto secs = ParseDurationSeconds(d);
    if (!secs) return Fail(f["duration"].Err(secs.error().message));
    w.duration_s = *secs;
  }
  HONE_ASSIGN_OR_RETURN(w.think_scale, f["think_scale"].DoubleOr(1.0, 0, 100));
  if (f["window"].defined()) {
    if (w.kind != "fixed") return Fail(f["window"].Err("applies to fixed workloads (agentic replays use duration)"));
    HONE_ASSIGN_OR_RETURN(std::string d, f["window"].Str());
    auto secs = ParseDurationSeconds(d);
    if (!secs) return Fail(f["window"].Err(secs.error().message));
    w.window_s = *secs;
  }
  if (f["ramp"].defined()) {
    if (w.window_s <= 0) return Fail(f["ramp"].Err("needs a measurement window (workload.window)"));
    HONE_ASSIGN_OR_RETURN(std::string d, f["ramp"].Str());
    auto secs = ParseDurationSeconds(d);
    if (!secs) return Fail(f["ramp"].Err(secs.error().message));
    w.ramp_s = *secs;
  }
  Field sweep = f["sweep"];
  if (sweep.defined()) {
    HONE_TRY(sweep.CheckKeys({"concurrency", "isl_osl", "retune", "slo_search"}));
    if (sweep["retune"].defined()) {
      HONE_ASSIGN_OR_RETURN(int64_t retune, sweep["retune"].Int(0, 16));
      w.sweep_retune = static_cast<int>(retune);
    }
    if (sweep["slo_search"].defined()) {
      HONE_ASSIGN_OR_RETURN(int64_t probes, sweep["slo_search"].Int(0, 16));
      w.sweep_slo_search = static_cast<int>(probes);
    }
    HONE_ASSIGN_OR_RETURN(auto cs, sweep["concurrency"].IntList(1, 100000));
    for (int64_t v : cs) w.sweep_concurrency.push_back(static_cast<int>(v));
    for (const Field& pair : sweep["isl_osl"].Items()) {
      HONE_ASSIGN_OR_RETURN(auto io, pair.IntList(1, 1 << 24));
      if (io.size() != 2) return Fail(pair.Err("expected [isl, osl]"));
      w.sweep_isl_osl.emplace_back(io[0], io[1]);
    }
  }
  return Ok();
}

Status ParseObjective(const Field& f, ObjectiveSpec& o, const std::vector<std::string>& known) {
  if (!f.defined()) return Ok();
  HONE_TRY(f.CheckKeys({"metric", "direction", "slo"}));
  HONE_ASSIGN_OR_RETURN(o.metric, f["metric"].StrOr("total_tps_per_gpu"));
  if (o.metric == "goodput") o.metric = "goodput_rps";
  HONE_TRY(CheckMetric(f["metric"], o.metric, known));
  HONE_ASSIGN_OR_RETURN(std::string dir, f["direction"].StrOr("maximize"));
  if (dir != "maximize" && dir != "minimize") return Fail(f["direction"].Err("must be maximize or minimize"));
  o.maximize = dir == "maximize";
  for (const Field& item : f["slo"].Items()) {
    HONE_ASSIGN_OR_RETURN(std::string text, item.Str());
    SloConstraint c;
    size_t ge = text.find(">="), le = text.find("<=");
    size_t pos = ge != std::string::npos ? ge : le;
    if (pos == std::string::npos) return Fail(item.Err("expected 'metric >= value' or 'metric <= value'"));
    c.at_least = ge != std::string::npos;
    c.metric = std::string(Trim(text.substr(0, pos)));
    auto v = ParseDouble(text.substr(pos + 2));
    if (!v) return Fail(item.Err("bad value in '" + text + "'"));
    c.value = *v;
    // A per-request SLO: what makes a request good (goodput).
    double* good = c.metric == "ttft_ms" ? &o.good_ttft_ms
                   : c.metric == "tpot_ms" ? &o.good_tpot_ms
                   : c.metric == "e2el_ms" ? &o.good_e2el_ms
                                           : nullptr;
    if (good) {
      if (c.at_least || c.value <= 0) {
        return Fail(item.Err("a per-request SLO is '" + c.metric + " <= milliseconds' (> 0), got '" + text + "'"));
      }
      *good = c.value;
      continue;
    }
    if (!known.empty() && std::find(known.begin(), known.end(), c.metric) == known.end()) {
      return Fail(item.Err("unknown SLO metric '" + c.metric +
                           "': an SLO is a percentile (p50|p90|p95|p99|mean)_(ttft|tpot|itl|e2el)_ms, "
                           "(p50|p90|p95|p99)_intvty, or a per-request ttft_ms|tpot_ms|e2el_ms for goodput (known: " +
                           Join(known, ", ") + ")"));
    }
    o.slos.push_back(c);
  }
  if (o.metric == "goodput_rps" && !o.any_goodput_slo()) {
    return Fail(f["metric"].Err(
        "goodput counts the requests that meet per-request SLOs: add at least one of 'ttft_ms <= X', "
        "'tpot_ms <= X', 'e2el_ms <= X' to slo"));
  }
  return Ok();
}

Status ParseAccuracy(const Field& f, AccuracySpec& a) {
  if (!f.defined()) return Ok();
  HONE_TRY(f.CheckKeys({"enabled", "probes", "probe_tokens", "min_token_agreement", "kld", "max_kld",
                           "max_ppl_delta", "aa"}));
  HONE_ASSIGN_OR_RETURN(a.enabled, f["enabled"].BoolOr(true));
  HONE_ASSIGN_OR_RETURN(int64_t p, f["probes"].IntOr(8, 1, 1000));
  a.probes = static_cast<int>(p);
  HONE_ASSIGN_OR_RETURN(int64_t t, f["probe_tokens"].IntOr(16, 1, 4096));
  a.probe_tokens = static_cast<int>(t);
  HONE_ASSIGN_OR_RETURN(a.min_token_agreement, f["min_token_agreement"].DoubleOr(0.9, 0, 1));
  HONE_ASSIGN_OR_RETURN(a.kld, f["kld"].BoolOr(true));
  HONE_ASSIGN_OR_RETURN(a.max_kld, f["max_kld"].DoubleOr(0.01, 0, 100));
  HONE_ASSIGN_OR_RETURN(a.max_ppl_delta, f["max_ppl_delta"].DoubleOr(0.05, 0, 100));
  HONE_ASSIGN_OR_RETURN(a.aa, f["aa"].BoolOr(true));
  return Ok();
}

Status ParseBudget(const Field& f, BudgetSpec& b) {
  if (!f.defined()) return Ok();
  HONE_TRY(f.CheckKeys({"wall", "max_trials", "max_cycles"}));
  if (f["wall"].defined()) {
    HONE_ASSIGN_OR_RETURN(std::string text, f["wall"].Str());
    auto secs = ParseDurationSeconds(text);
    if (!secs) return Fail(f["wall"].Err(secs.error().message));
    b.wall_s = *secs;
  }
  HONE_ASSIGN_OR_RETURN(int64_t t, f["max_trials"].IntOr(0, 0, 1000000));
  b.max_trials = static_cast<int>(t);
  HONE_ASSIGN_OR_RETURN(int64_t c, f["max_cycles"].IntOr(3, 1, 1000));
  b.max_cycles = static_cast<int>(c);
  return Ok();
}

Status ParseMeasurement(const Field& f, MeasurementSpec& m) {
  if (!f.defined()) return Ok();
  HONE_TRY(f.CheckKeys({"min_pairs", "max_pairs", "pair_step", "confidence", "min_gain", "screen", "screen_drop",
                        "screen_recheck", "aa_pairs", "pool_retests", "health_timeout", "request_timeout"}));
  HONE_ASSIGN_OR_RETURN(int64_t lo, f["min_pairs"].IntOr(3, 2, 100));
  HONE_ASSIGN_OR_RETURN(int64_t hi, f["max_pairs"].IntOr(std::max<int64_t>(9, lo), lo, 200));
  HONE_ASSIGN_OR_RETURN(int64_t step, f["pair_step"].IntOr(3, 1, 100));
  m.min_pairs = static_cast<int>(lo);
  m.max_pairs = static_cast<int>(hi);
  m.pair_step = static_cast<int>(step);
  HONE_ASSIGN_OR_RETURN(m.confidence, f["confidence"].DoubleOr(0.95, 0.5, 0.999));
  HONE_ASSIGN_OR_RETURN(m.min_gain, f["min_gain"].DoubleOr(0.01, 0, 1));
  HONE_ASSIGN_OR_RETURN(m.screen, f["screen"].BoolOr(true));
  HONE_ASSIGN_OR_RETURN(m.screen_drop, f["screen_drop"].DoubleOr(0.10, 0, 1));
  HONE_ASSIGN_OR_RETURN(int64_t recheck, f["screen_recheck"].IntOr(2, 0, 100));
  m.screen_recheck = static_cast<int>(recheck);
  HONE_ASSIGN_OR_RETURN(int64_t aa, f["aa_pairs"].IntOr(3, 1, 100));
  m.aa_pairs = static_cast<int>(aa);
  HONE_ASSIGN_OR_RETURN(m.pool_retests, f["pool_retests"].BoolOr(true));
  if (f["health_timeout"].defined()) {
    HONE_ASSIGN_OR_RETURN(std::string text, f["health_timeout"].Str());
    auto secs = ParseDurationSeconds(text);
    if (!secs) return Fail(f["health_timeout"].Err(secs.error().message));
    m.health_timeout_s = *secs;
  }
  if (f["request_timeout"].defined()) {
    HONE_ASSIGN_OR_RETURN(std::string text, f["request_timeout"].Str());
    auto secs = ParseDurationSeconds(text);
    if (!secs || *secs <= 0) return Fail(f["request_timeout"].Err(secs ? "must be positive" : secs.error().message));
    m.request_timeout_s = *secs;
  }
  return Ok();
}

}  // namespace

Result<SessionSpec> ParseSessionSpec(const std::string& text, const std::string& source,
                                     const std::vector<std::string>& known_metrics) {
  HONE_ASSIGN_OR_RETURN(Field root, Field::Parse(text, source));
  HONE_TRY(root.RequireMap());
  HONE_TRY(root.CheckKeys({"name", "output_dir", "target", "workload", "objective", "accuracy", "budget",
                           "measurement", "kb", "search", "kernel", "agents", "patches"}));
  SessionSpec s;
  s.source = source;
  HONE_ASSIGN_OR_RETURN(s.name, root["name"].StrOr("session"));
  for (char c : s.name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return Fail(root["name"].Err("use letters, digits, '-', '_' and '.' only"));
    }
  }
  HONE_ASSIGN_OR_RETURN(s.output_dir, root["output_dir"].StrOr(""));
  HONE_TRY(ParseTarget(root["target"], s.target));
  HONE_TRY(ParseWorkload(root["workload"], s.workload));
  HONE_TRY(ParseObjective(root["objective"], s.objective, known_metrics));
  HONE_TRY(ParseAccuracy(root["accuracy"], s.accuracy));
  HONE_TRY(ParseBudget(root["budget"], s.budget));
  HONE_TRY(ParseMeasurement(root["measurement"], s.measurement));
  Field kb = root["kb"];
  if (kb.defined()) {
    HONE_TRY(kb.CheckKeys({"enabled", "path", "url", "min_confidence", "reproduce_fraction"}));
    HONE_ASSIGN_OR_RETURN(s.kb.enabled, kb["enabled"].BoolOr(true));
    HONE_ASSIGN_OR_RETURN(s.kb.path, kb["path"].StrOr(""));
    HONE_ASSIGN_OR_RETURN(s.kb.url, kb["url"].StrOr(""));
    if (!s.kb.url.empty() && !s.kb.url.starts_with("postgresql://") && !s.kb.url.starts_with("postgres://")) {
      return Fail(kb["url"].Err("must be a postgresql:// URL (got '" + s.kb.url.substr(0, s.kb.url.find("://")) +
                                "://...')"));
    }
    if (!s.kb.url.empty() && !s.kb.path.empty()) {
      return Fail(kb["url"].Err("give either kb.path (a SQLite file) or kb.url (PostgreSQL), not both"));
    }
    HONE_ASSIGN_OR_RETURN(s.kb.min_confidence, kb["min_confidence"].DoubleOr(0.5, 0, 1));
    HONE_ASSIGN_OR_RETURN(s.kb.reproduce_fraction, kb["reproduce_fraction"].DoubleOr(0.5, 0, 1));
  }
  Field search = root["search"];
  if (search.defined()) {
    HONE_TRY(search.CheckKeys({"strategy", "knobs", "exclude", "seed", "plateau"}));
    HONE_ASSIGN_OR_RETURN(s.search.strategy, search["strategy"].StrOr("planner"));
    if (s.search.strategy != "planner" && s.search.strategy != "random" && s.search.strategy != "grid" &&
        s.search.strategy != "tpe") {
      return Fail(search["strategy"].Err("must be planner, random, grid or tpe"));
    }
    HONE_ASSIGN_OR_RETURN(s.search.knobs, search["knobs"].StrList());
    HONE_ASSIGN_OR_RETURN(s.search.exclude, search["exclude"].StrList());
    HONE_ASSIGN_OR_RETURN(int64_t seed, search["seed"].IntOr(1, 0));
    s.search.seed = static_cast<uint64_t>(seed);
    HONE_ASSIGN_OR_RETURN(int64_t plateau, search["plateau"].IntOr(8, 0, 1000000));
    s.search.plateau = static_cast<int>(plateau);
  }
  HONE_ASSIGN_OR_RETURN(s.patches, root["patches"].StrList());
  // Relative patch paths are relative to the spec file.
  std::string base = source.find('/') == std::string::npos ? "" : source.substr(0, source.rfind('/') + 1);
  for (std::string& p : s.patches) {
    if (!p.empty() && p[0] != '/') p = base + p;
  }
  Field kernel = root["kernel"];
  if (kernel.defined()) {
    HONE_TRY(kernel.CheckKeys({"backend", "tasks", "arch"}));
    HONE_ASSIGN_OR_RETURN(s.kernel.backend, kernel["backend"].StrList());
    HONE_ASSIGN_OR_RETURN(s.kernel.tasks, kernel["tasks"].StrList());
    HONE_ASSIGN_OR_RETURN(s.kernel.arch, kernel["arch"].StrOr("sm_90a"));
  }
  Field agents = root["agents"];
  if (agents.defined()) {
    HONE_TRY(agents.CheckKeys({"mode", "endpoint", "model", "api_key_env", "max_cost_usd", "max_tokens", "roles",
                               "required", "preset", "command", "price", "specialist_tasks"}));
    HONE_ASSIGN_OR_RETURN(s.agents.mode, agents["mode"].StrOr("none"));
    HONE_ASSIGN_OR_RETURN(s.agents.endpoint, agents["endpoint"].StrOr(""));
    HONE_ASSIGN_OR_RETURN(s.agents.model, agents["model"].StrOr(""));
    HONE_ASSIGN_OR_RETURN(s.agents.api_key_env, agents["api_key_env"].StrOr(""));
    HONE_ASSIGN_OR_RETURN(s.agents.max_cost_usd, agents["max_cost_usd"].DoubleOr(0, 0, 1e6));
    HONE_ASSIGN_OR_RETURN(int64_t mt, agents["max_tokens"].IntOr(0, 0));
    s.agents.max_tokens = static_cast<int>(mt);
    HONE_ASSIGN_OR_RETURN(s.agents.roles, agents["roles"].StrList());
    for (const std::string& r : s.agents.roles) {
      if (r != "orchestrator" && r != "critic" && r != "robustness" && r != "specialist") {
        return Fail(agents["roles"].Err("unknown role '" + r + "' (orchestrator, critic, robustness, specialist)"));
      }
    }
    HONE_ASSIGN_OR_RETURN(s.agents.required, agents["required"].BoolOr(true));
    HONE_ASSIGN_OR_RETURN(s.agents.preset, agents["preset"].StrOr(""));
    HONE_ASSIGN_OR_RETURN(s.agents.command, agents["command"].StrList());
    // A relative path to the agent's program is relative to the spec file, as patches
    // are (the agent runs in its worktree, where the user's relative path means
    // nothing); a bare name is looked up on PATH.
    if (!s.agents.command.empty()) {
      std::string& exe = s.agents.command.front();
      if (exe.find('/') != std::string::npos && exe[0] != '/') {
        exe = std::filesystem::absolute(base + exe).lexically_normal().string();
      }
    }
    Field price = agents["price"];
    if (price.defined()) {
      HONE_TRY(price.CheckKeys({"input", "output"}));
      HONE_ASSIGN_OR_RETURN(s.agents.price_input_usd_per_mtok, price["input"].DoubleOr(0, 0, 1e6));
      HONE_ASSIGN_OR_RETURN(s.agents.price_output_usd_per_mtok, price["output"].DoubleOr(0, 0, 1e6));
    }
    Field tasks = agents["specialist_tasks"];
    if (tasks.defined()) {
      if (!tasks.is_seq()) return Fail(tasks.Err("expected a list of {title, goal, files}"));
      for (const Field& t : tasks.Items()) {
        HONE_TRY(t.RequireMap());
        HONE_TRY(t.CheckKeys({"title", "goal", "files"}));
        SpecialistTaskSpec task;
        HONE_ASSIGN_OR_RETURN(task.title, t["title"].Str());
        HONE_ASSIGN_OR_RETURN(task.goal, t["goal"].Str());
        HONE_ASSIGN_OR_RETURN(task.files, t["files"].StrList());
        if (task.title.empty() || task.goal.empty()) return Fail(t.Err("a specialist task needs a title and a goal"));
        s.agents.specialist_tasks.push_back(std::move(task));
      }
    }
    const auto& roles = s.agents.roles;
    const bool specialist = std::find(roles.begin(), roles.end(), "specialist") != roles.end();
    if (specialist && s.agents.specialist_tasks.empty()) {
      return Fail(agents["roles"].Err("the specialist needs agents.specialist_tasks (the source changes to write)"));
    }
    if (!specialist && !s.agents.specialist_tasks.empty()) {
      return Fail(tasks.Err("specialist_tasks need the specialist in agents.roles"));
    }
    // No diff is merged without a critic's sign-off (data/policy/rules.yaml).
    if (specialist && std::find(roles.begin(), roles.end(), "critic") == roles.end()) {
      return Fail(agents["roles"].Err("the specialist's diffs need the critic's sign-off: list critic too"));
    }
  }
  return s;
}

Result<SessionSpec> LoadSessionSpec(const std::string& path, const std::vector<std::string>& known_metrics) {
  std::ifstream in(path);
  if (!in) return Fail(Error{ErrorCode::kNotFound, path + ": cannot open file", {{"path", path}}});
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseSessionSpec(ss.str(), path, known_metrics);
}

}  // namespace hone::spec
