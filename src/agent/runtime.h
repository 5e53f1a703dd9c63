// AgentRuntime: one session's LLM plumbing, built from a BackendConfig: the redactor,
// the usage meter (with the session's hard caps), the transcript file, the transport,
// the backend and the client every role uses. The lead's composition root
// (cli/session glue) creates one per session when agents are enabled and hands
// `client()` to the roles; without agents none of this exists and hone runs on its
// deterministic planner.
//
// BackendConfig kinds: "openai" (OpenAI-compatible: OpenAI, llama-server, vLLM,
// SGLang), "anthropic" (Messages API), "cli" (a preset from data/agent/agents.yaml:
// claude, codex, or a custom argv). A remote backend without a key variable, or with
// the variable unset, is an error at creation (the credential is never guessed). Keys
// come only from the environment (EnvLookup) and are registered with the redactor
// before any call.
//
// Owns everything it builds; not copyable. `data` and `clock` must outlive it. Thread-safe as its parts are (the client
// serializes calls).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/backend.h"
#include "agent/client.h"
#include "agent/secrets.h"
#include "agent/settings.h"
#include "agent/transcript.h"
#include "agent/transport.h"
#include "agent/usage.h"
#include "spec/session_spec.h"
#include "sys/clock.h"

namespace hone::agent {

struct BackendConfig {
  std::string kind;          // openai | anthropic | cli
  std::string base_url;      // openai / anthropic endpoint
  std::string model;
  std::string api_key_env;   // empty: no key (loopback servers only) / the preset's variable
  std::string preset;        // cli: claude | codex
  std::vector<std::string> argv;  // cli: a custom argv (output mode "text") instead of a preset
  double timeout_s = 0;      // 0: data/agent/agents.yaml's timeout for the kind
  UsageLimits limits;        // 0 fields: the defaults from agents.yaml
  // The model's price when the price table's does not apply (e.g. a loopback proxy to
  // a paid API; loopback endpoints are otherwise free).
  std::optional<ModelPrice> price;
};

// From the session spec's agents section: mode openai | anthropic | cli (preset or
// command) | claude | codex (endpoint, model, api_key_env, max_cost_usd, max_tokens).
// mode "none" is
// kFailedPrecondition (the caller should not build a runtime).
Result<BackendConfig> BackendConfigFromSpec(const spec::AgentsSpec& agents);

class AgentRuntime {
 public:
  // A runtime whose first backend is `config`; its spending caps (config.limits, else
  // the data defaults) are the session's. `transport`: nullptr for the real one.
  // `transcript_path`: "" for none.
  static Result<std::unique_ptr<AgentRuntime>> Create(const BackendConfig& config, const AgentData& data,
                                                      const std::string& transcript_path, sys::Clock& clock,
                                                      EnvLookup env, std::function<void(const std::string&)> on_event = {},
                                                      Transport* transport = nullptr);
  AgentRuntime(const AgentRuntime&) = delete;
  AgentRuntime& operator=(const AgentRuntime&) = delete;

  // Another backend for the same session (say a coding-agent CLI for specialists next
  // to an API model for the critic). It shares this runtime's spending cap, redactor
  // (every key of the session is masked everywhere) and transcript; config.limits is
  // ignored. The returned client lives as long as the runtime.
  Result<LlmClient*> AddBackend(const BackendConfig& config, EnvLookup env);

  // The first backend's client.
  LlmClient& client() { return *clients_.front(); }
  Backend& backend() { return *backends_.front(); }
  UsageMeter& meter() { return *meter_; }
  Redactor& redactor() { return *redactor_; }
  const std::string& transcript_path() const { return transcript_path_; }

 private:
  AgentRuntime(const AgentData& data, sys::Clock& clock) : data_(data), clock_(clock) {}
  Result<std::unique_ptr<Backend>> MakeBackend(const BackendConfig& config, const EnvLookup& env);

  const AgentData& data_;
  sys::Clock& clock_;
  std::function<void(const std::string&)> on_event_;
  std::unique_ptr<Redactor> redactor_;
  std::unique_ptr<UsageMeter> meter_;
  std::unique_ptr<Transcript> transcript_;
  std::unique_ptr<Transport> own_transport_;
  Transport* transport_ = nullptr;
  std::vector<std::unique_ptr<Backend>> backends_;
  std::vector<std::unique_ptr<LlmClient>> clients_;
  std::string transcript_path_;
};

}  // namespace hone::agent
