#include "agent/runtime.h"

#include "agent/cli_backend.h"
#include "agent/http_backends.h"
#include "core/strings.h"

namespace hone::agent {

Result<BackendConfig> BackendConfigFromSpec(const spec::AgentsSpec& agents) {
  BackendConfig c;
  c.model = agents.model;
  c.base_url = agents.endpoint;
  c.api_key_env = agents.api_key_env;
  c.limits.max_usd = agents.max_cost_usd;
  c.limits.max_tokens = agents.max_tokens;
  if (agents.price_input_usd_per_mtok > 0 || agents.price_output_usd_per_mtok > 0) {
    c.price = ModelPrice{agents.price_input_usd_per_mtok, agents.price_output_usd_per_mtok};
  }
  const std::string& mode = agents.mode;
  if (mode == "none" || mode.empty()) return FailedPrecondition("agents are off (agents.mode: none)");
  if (mode == "openai") {
    c.kind = "openai";
    if (c.base_url.empty()) c.base_url = "https://api.openai.com/v1";
  } else if (mode == "anthropic") {
    c.kind = "anthropic";
    if (c.base_url.empty()) c.base_url = "https://api.anthropic.com";
    if (c.api_key_env.empty()) c.api_key_env = "ANTHROPIC_API_KEY";
  } else if (mode == "claude" || mode == "codex") {
    c.kind = "cli";
    c.preset = mode;
  } else if (mode == "cli") {
    c.kind = "cli";
    c.preset = agents.preset;
    c.argv = agents.command;
    if (c.preset.empty() && c.argv.empty()) {
      return InvalidArgument("agents.mode cli needs agents.preset (claude, codex) or agents.command (an argv)");
    }
  } else {
    return InvalidArgument("agents.mode: unknown mode '" + mode + "' (none, openai, anthropic, cli, claude, codex)");
  }
  if (c.kind == "openai" && c.api_key_env.empty() && !IsLoopbackUrl(c.base_url)) c.api_key_env = "OPENAI_API_KEY";
  return c;
}

Result<std::unique_ptr<AgentRuntime>> AgentRuntime::Create(const BackendConfig& config, const AgentData& data,
                                                           const std::string& transcript_path, sys::Clock& clock,
                                                           EnvLookup env, std::function<void(const std::string&)> on_event,
                                                           Transport* transport) {
  std::unique_ptr<AgentRuntime> rt(new AgentRuntime(data, clock));
  rt->on_event_ = std::move(on_event);
  rt->redactor_ = std::make_unique<Redactor>();
  UsageLimits limits = data.default_limits;
  if (config.limits.max_usd > 0) limits.max_usd = config.limits.max_usd;
  if (config.limits.max_tokens > 0) limits.max_tokens = config.limits.max_tokens;
  if (config.limits.max_calls > 0) limits.max_calls = config.limits.max_calls;
  rt->meter_ = std::make_unique<UsageMeter>(limits);
  if (!transport) {
    rt->own_transport_ = std::make_unique<RealTransport>();
    transport = rt->own_transport_.get();
  }
  rt->transport_ = transport;
  if (!transcript_path.empty()) {
    rt->transcript_ = std::make_unique<Transcript>(transcript_path, *rt->redactor_);
    rt->transcript_path_ = transcript_path;
  }
  HONE_TRY(rt->AddBackend(config, std::move(env)));
  return rt;
}

Result<LlmClient*> AgentRuntime::AddBackend(const BackendConfig& config, EnvLookup env) {
  HONE_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, MakeBackend(config, env));
  ClientOptions co;
  co.retry = data_.retry;
  co.on_event = on_event_;
  clients_.push_back(std::make_unique<LlmClient>(*backend, *meter_, clock_, *redactor_, transcript_.get(), co));
  backends_.push_back(std::move(backend));
  return clients_.back().get();
}

Result<std::unique_ptr<Backend>> AgentRuntime::MakeBackend(const BackendConfig& config, const EnvLookup& env) {
  const AgentData& data = data_;
  double timeout_s = config.timeout_s > 0 ? config.timeout_s : data.TimeoutFor(config.kind);
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));

  if (config.kind == "openai" || config.kind == "anthropic") {
    if (config.base_url.empty()) return InvalidArgument(config.kind + " backend: no endpoint URL");
    if (config.model.empty()) return InvalidArgument(config.kind + " backend: no model named");
    bool local = IsLoopbackUrl(config.base_url);
    if (config.base_url.starts_with("https://") && !HttpsSupported()) {
      return FailedPrecondition("https endpoints need libcurl: run scripts/setup.sh (libcurl4-openssl-dev) and rebuild");
    }
    HttpBackendOptions o;
    o.base_url = config.base_url;
    o.model = config.model;
    o.chars_per_token = data.chars_per_token;
    o.timeout = timeout;
    o.price = config.price ? *config.price : local ? ModelPrice{} : data.prices.For(config.model);
    if (!config.api_key_env.empty()) {
      HONE_ASSIGN_OR_RETURN(o.key, SecretFromEnv(env, config.api_key_env));
      redactor_->Add(o.key);
    } else if (!local) {
      return InvalidArgument(config.kind + " backend at " + config.base_url +
                             " needs an API key variable (api_key_env); keys are read from the environment only");
    }
    if (config.kind == "openai") {
      if (Contains(config.base_url, "api.openai.com")) o.max_tokens_field = "max_completion_tokens";
      return std::unique_ptr<Backend>(std::make_unique<OpenAiBackend>(std::move(o), *transport_, *redactor_));
    }
    return std::unique_ptr<Backend>(std::make_unique<AnthropicBackend>(std::move(o), *transport_, *redactor_));
  }
  if (config.kind == "cli") {
    CliBackendOptions o;
    if (!config.argv.empty()) {
      o.name = config.argv[0];
      o.preset.argv = config.argv;
      o.preset.output = "text";
    } else {
      auto it = data.cli_presets.find(config.preset);
      if (it == data.cli_presets.end()) {
        return InvalidArgument("unknown coding-agent preset '" + config.preset + "' (see data/agent/agents.yaml)");
      }
      o.name = config.preset;
      o.preset = it->second;
    }
    if (!config.api_key_env.empty()) o.preset.api_key_env = config.api_key_env;
    o.model = config.model;
    o.price = config.price ? *config.price : data.prices.For(config.model);
    o.chars_per_token = data.chars_per_token;
    o.timeout = timeout;
    o.env = env;
    // Register the key (when present) so nothing the CLI prints can leak it. A missing
    // key is not an error here: CLIs may be logged in by other means; a run that
    // fails on credentials disables the backend.
    if (!o.preset.api_key_env.empty()) {
      if (auto key = SecretFromEnv(env, o.preset.api_key_env)) {
        redactor_->Add(*key);
      } else {
        o.preset.api_key_env.clear();
      }
    }
    return std::unique_ptr<Backend>(std::make_unique<CliBackend>(std::move(o), *redactor_));
  }
  return InvalidArgument("unknown agent backend kind '" + config.kind + "' (openai, anthropic, cli)");
}

}  // namespace hone::agent
