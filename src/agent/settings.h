// AgentData: everything the agent layer reads from data/agent/, loaded and checked
// once: limits, retry policy, prices, timeouts, coding-agent CLI presets and detector
// thresholds (agents.yaml), each role's instructions (roles.yaml) and each role's
// reply schema (<role>.schema.json).
//
// Errors name the file, line, column and field (spec::Field). A plain immutable value
// after Load; share it by const reference.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "agent/json_schema.h"
#include "agent/usage.h"
#include "core/error.h"

namespace hone::agent {

struct RetryPolicy {
  int max_attempts = 4;             // transport attempts per request (>= 1)
  double backoff_initial_s = 1.0;
  double backoff_max_s = 30.0;
  double backoff_multiplier = 2.0;
  int max_invalid_replies = 2;      // re-asks after a malformed or schema-violating reply
};

struct CliPreset {
  std::vector<std::string> argv;        // with {prompt} / {prompt_file}
  std::vector<std::string> model_args;  // with {model}; appended when a model is set
  std::string output = "text";          // text | claude_json | codex_jsonl
  std::string api_key_env;
  double worst_case_usd = 1.0;          // charged against the cap before a run
  std::vector<std::string> credential_patterns;  // lower-case substrings
};

struct DetectorThresholds {
  int stall_candidates = 8;
  double stall_seconds = 3600;
  int crash_streak = 3;
  int crash_same_kind = 4;
  int circling_window = 12;
  int circling_repeats = 2;
  int flip_flops = 2;
  int cooldown_candidates = 4;
};

struct RoleText {
  std::string system;
  std::map<std::string, std::string> phases;  // orchestrator only
  int refresh_every = 4;
  int memory_lines = 24;
  int history_compact = 12;
  std::string chat_suffix;  // specialist only
  // The phase instruction, or the "default" one.
  std::string Phase(const std::string& phase) const;
};

struct AgentData {
  UsageLimits default_limits;
  RetryPolicy retry;
  double chars_per_token = 3.0;
  PriceTable prices;
  std::map<std::string, double> timeouts_s;  // openai | anthropic | cli
  std::map<std::string, CliPreset> cli_presets;
  DetectorThresholds detectors;
  RoleText orchestrator, critic, robustness, specialist;
  JsonSchema orchestrator_schema, critic_schema, robustness_schema, specialist_schema;

  // Loads <root>/data/agent/ (root: the source tree or HONE_DATA_DIR).
  static Result<AgentData> Load(const std::string& root);
  double TimeoutFor(const std::string& kind) const;
};

}  // namespace hone::agent
