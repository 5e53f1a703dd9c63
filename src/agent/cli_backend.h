// CliBackend: a coding agent run as a child process (`claude -p`, `codex exec`, or any
// argv), one run per Complete().
//
// The request is flattened into one prompt and substituted into the preset's argv
// ({prompt} as an argument, or {prompt_file} as a file in a private temp directory,
// never inside the worktree). The child runs in its own process group
// (sys::RunCommand) with the request's workdir as its working directory, so a
// specialist's edits land in its own worktree; it is killed by its group on timeout.
// The API key is read from the environment variable the preset names and handed to
// the child through its environment, never on the command line. All output is
// redacted before it is parsed or kept.
//
// Output modes: "text" (stdout is the reply), "claude_json" (claude --output-format
// json: result, is_error, usage, total_cost_usd) and "codex_jsonl" (codex exec --json
// events: the last agent_message, turn.completed usage, turn.failed/error). A failed
// run whose output matches a credential pattern is a credentials failure (the client
// stops using the backend); timeouts and other failures are fatal (agent runs are
// too expensive to repeat blindly). Not thread-safe.
#pragma once

#include <chrono>
#include <string>

#include "agent/backend.h"
#include "agent/secrets.h"
#include "agent/settings.h"

namespace hone::agent {

struct CliBackendOptions {
  std::string name = "cli";  // preset name, for messages
  CliPreset preset;
  std::string model;         // empty: the CLI's default (model_args not appended)
  ModelPrice price;          // for CLIs that report tokens but not cost
  double chars_per_token = 3.0;
  std::chrono::milliseconds timeout{900'000};
  EnvLookup env;             // where the key comes from (ProcessEnv() in production)
};

class CliBackend final : public Backend {
 public:
  CliBackend(CliBackendOptions options, const Redactor& redactor)
      : options_(std::move(options)), redactor_(redactor) {}
  std::string name() const override { return "cli:" + options_.name; }
  std::string kind() const override { return "cli"; }
  std::string model() const override { return options_.model; }
  Result<ChatReply> Complete(const ChatRequest& request) override;
  Usage WorstCase(const ChatRequest& request) const override;

  // The argv for a prompt (exposed for tests); {prompt_file} becomes `prompt_file`.
  std::vector<std::string> Argv(const std::string& prompt, const std::string& prompt_file) const;

 private:
  Result<ChatReply> Parse(const std::string& output, bool exited_ok, const std::string& exit_text,
                          const ChatRequest& request) const;
  bool CredentialFailure(const std::string& lower_output) const;

  CliBackendOptions options_;
  const Redactor& redactor_;
};

}  // namespace hone::agent
