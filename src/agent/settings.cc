#include "agent/settings.h"

#include "spec/yaml.h"

namespace hone::agent {

using spec::Field;

std::string RoleText::Phase(const std::string& phase) const {
  auto it = phases.find(phase);
  if (it != phases.end()) return it->second;
  it = phases.find("default");
  return it == phases.end() ? "" : it->second;
}

double AgentData::TimeoutFor(const std::string& kind) const {
  auto it = timeouts_s.find(kind);
  return it == timeouts_s.end() ? 120.0 : it->second;
}

namespace {

Result<ModelPrice> ParsePrice(const Field& f) {
  HONE_TRY(f.CheckKeys({"input", "output"}));
  ModelPrice p;
  HONE_ASSIGN_OR_RETURN(p.input_usd_per_mtok, f["input"].Double(0, 1e6));
  HONE_ASSIGN_OR_RETURN(p.output_usd_per_mtok, f["output"].Double(0, 1e6));
  return p;
}

Status ParseAgents(const Field& root, AgentData& d) {
  HONE_TRY(root.CheckKeys({"version", "limits", "retry", "chars_per_token", "prices", "timeouts", "cli_presets",
                           "detectors"}));
  Field lim = root["limits"];
  HONE_TRY(lim.CheckKeys({"max_usd", "max_tokens", "max_calls"}));
  HONE_ASSIGN_OR_RETURN(d.default_limits.max_usd, lim["max_usd"].Double(0, 1e6));
  HONE_ASSIGN_OR_RETURN(d.default_limits.max_tokens, lim["max_tokens"].Int(0));
  HONE_ASSIGN_OR_RETURN(int64_t calls, lim["max_calls"].Int(0, 1'000'000));
  d.default_limits.max_calls = static_cast<int>(calls);

  Field r = root["retry"];
  HONE_TRY(r.CheckKeys({"max_attempts", "backoff_initial_s", "backoff_max_s", "backoff_multiplier", "max_invalid_replies"}));
  HONE_ASSIGN_OR_RETURN(int64_t attempts, r["max_attempts"].Int(1, 20));
  d.retry.max_attempts = static_cast<int>(attempts);
  HONE_ASSIGN_OR_RETURN(d.retry.backoff_initial_s, r["backoff_initial_s"].Double(0, 3600));
  HONE_ASSIGN_OR_RETURN(d.retry.backoff_max_s, r["backoff_max_s"].Double(0, 3600));
  HONE_ASSIGN_OR_RETURN(d.retry.backoff_multiplier, r["backoff_multiplier"].Double(1, 10));
  HONE_ASSIGN_OR_RETURN(int64_t invalid, r["max_invalid_replies"].Int(0, 10));
  d.retry.max_invalid_replies = static_cast<int>(invalid);
  HONE_ASSIGN_OR_RETURN(d.chars_per_token, root["chars_per_token"].Double(0.5, 10));

  Field prices = root["prices"];
  HONE_TRY(prices.CheckKeys({"default", "models"}));
  HONE_ASSIGN_OR_RETURN(ModelPrice fallback, ParsePrice(prices["default"]));
  std::map<std::string, ModelPrice> models;
  for (const auto& [name, f] : prices["models"].Entries()) {
    HONE_ASSIGN_OR_RETURN(models[name], ParsePrice(f));
  }
  d.prices = PriceTable(fallback, std::move(models));

  for (const auto& [kind, f] : root["timeouts"].Entries()) {
    if (kind != "openai" && kind != "anthropic" && kind != "cli") {
      return Fail(f.Err("unknown backend kind '" + kind + "' (openai, anthropic, cli)"));
    }
    HONE_ASSIGN_OR_RETURN(d.timeouts_s[kind], f.Double(1, 86400));
  }

  for (const auto& [name, f] : root["cli_presets"].Entries()) {
    HONE_TRY(f.CheckKeys({"argv", "model_args", "output", "api_key_env", "worst_case_usd", "credential_patterns"}));
    CliPreset p;
    HONE_ASSIGN_OR_RETURN(p.argv, f["argv"].StrList());
    if (p.argv.empty()) return Fail(f["argv"].Err("must name a program"));
    if (f["model_args"].defined()) {
      HONE_ASSIGN_OR_RETURN(p.model_args, f["model_args"].StrList());
    }
    HONE_ASSIGN_OR_RETURN(p.output, f["output"].StrOr("text"));
    if (p.output != "text" && p.output != "claude_json" && p.output != "codex_jsonl") {
      return Fail(f["output"].Err("must be text, claude_json or codex_jsonl"));
    }
    HONE_ASSIGN_OR_RETURN(p.api_key_env, f["api_key_env"].StrOr(""));
    HONE_ASSIGN_OR_RETURN(p.worst_case_usd, f["worst_case_usd"].DoubleOr(1.0, 0, 1000));
    if (f["credential_patterns"].defined()) {
      HONE_ASSIGN_OR_RETURN(p.credential_patterns, f["credential_patterns"].StrList());
    }
    d.cli_presets[name] = std::move(p);
  }

  Field det = root["detectors"];
  HONE_TRY(det.CheckKeys({"stall_candidates", "stall_seconds", "crash_streak", "crash_same_kind", "circling_window",
                          "circling_repeats", "flip_flops", "cooldown_candidates"}));
  auto int_field = [&](const char* key, int& out) -> Status {
    HONE_ASSIGN_OR_RETURN(int64_t v, det[key].Int(1, 100000));
    out = static_cast<int>(v);
    return Ok();
  };
  HONE_TRY(int_field("stall_candidates", d.detectors.stall_candidates));
  HONE_ASSIGN_OR_RETURN(d.detectors.stall_seconds, det["stall_seconds"].Double(1, 1e7));
  HONE_TRY(int_field("crash_streak", d.detectors.crash_streak));
  HONE_TRY(int_field("crash_same_kind", d.detectors.crash_same_kind));
  HONE_TRY(int_field("circling_window", d.detectors.circling_window));
  HONE_TRY(int_field("circling_repeats", d.detectors.circling_repeats));
  HONE_TRY(int_field("flip_flops", d.detectors.flip_flops));
  HONE_TRY(int_field("cooldown_candidates", d.detectors.cooldown_candidates));
  return Ok();
}

Result<RoleText> ParseRole(const Field& f, bool orchestrator) {
  HONE_TRY(f.RequireMap());
  RoleText t;
  if (orchestrator) {
    HONE_TRY(f.CheckKeys({"system", "phases", "refresh_every", "memory_lines", "history_compact"}));
    HONE_ASSIGN_OR_RETURN(int64_t every, f["refresh_every"].IntOr(4, 1, 1000));
    HONE_ASSIGN_OR_RETURN(int64_t lines, f["memory_lines"].IntOr(24, 0, 1000));
    HONE_ASSIGN_OR_RETURN(int64_t compact, f["history_compact"].IntOr(12, 1, 10000));
    t.refresh_every = static_cast<int>(every);
    t.memory_lines = static_cast<int>(lines);
    t.history_compact = static_cast<int>(compact);
    for (const auto& [phase, text] : f["phases"].Entries()) {
      HONE_ASSIGN_OR_RETURN(t.phases[phase], text.Str());
    }
  } else {
    HONE_TRY(f.CheckKeys({"system", "chat_suffix"}));
    HONE_ASSIGN_OR_RETURN(t.chat_suffix, f["chat_suffix"].StrOr(""));
  }
  HONE_ASSIGN_OR_RETURN(t.system, f["system"].Str());
  if (t.system.empty()) return Fail(f["system"].Err("must not be empty"));
  return t;
}

}  // namespace

Result<AgentData> AgentData::Load(const std::string& root) {
  std::string dir = root + "/data/agent/";
  AgentData d;
  HONE_ASSIGN_OR_RETURN(Field agents, Field::LoadFile(dir + "agents.yaml"));
  HONE_TRY(ParseAgents(agents, d));
  HONE_ASSIGN_OR_RETURN(Field roles, Field::LoadFile(dir + "roles.yaml"));
  HONE_TRY(roles.CheckKeys({"version", "orchestrator", "critic", "robustness", "specialist"}));
  HONE_ASSIGN_OR_RETURN(d.orchestrator, ParseRole(roles["orchestrator"], true));
  HONE_ASSIGN_OR_RETURN(d.critic, ParseRole(roles["critic"], false));
  HONE_ASSIGN_OR_RETURN(d.robustness, ParseRole(roles["robustness"], false));
  HONE_ASSIGN_OR_RETURN(d.specialist, ParseRole(roles["specialist"], false));
  HONE_ASSIGN_OR_RETURN(d.orchestrator_schema, JsonSchema::Load(dir + "orchestrator.schema.json"));
  HONE_ASSIGN_OR_RETURN(d.critic_schema, JsonSchema::Load(dir + "critic.schema.json"));
  HONE_ASSIGN_OR_RETURN(d.robustness_schema, JsonSchema::Load(dir + "robustness.schema.json"));
  HONE_ASSIGN_OR_RETURN(d.specialist_schema, JsonSchema::Load(dir + "specialist.schema.json"));
  return d;
}

}  // namespace hone::agent
