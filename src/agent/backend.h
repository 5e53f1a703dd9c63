// Backend: one LLM endpoint hone can ask, as a single-attempt call.
//
// Implementations: OpenAI-compatible chat completions (OpenAI, and local llama-server,
// vLLM and SGLang; openai_backend.h), the Anthropic Messages API (anthropic_backend.h)
// and coding-agent CLIs run as child processes (`claude -p`, `codex exec`, any argv;
// cli_backend.h). A backend makes exactly one attempt per Complete(); retries,
// backoff, the spending cap, the credential stop and the transcript are the client's
// job (client.h), so every backend gets them the same way.
//
// Errors carry context "failure" = retryable | credentials | fatal (see
// FailureOf), plus "http_status" and "retry_after_s" where known. Error text never
// contains a key (backends redact what a server echoes). Backends are not
// thread-safe; the client serializes calls.
#pragma once

#include <string>
#include <vector>

#include "agent/json_schema.h"
#include "agent/usage.h"
#include "core/error.h"

namespace hone::agent {

struct ChatMessage {
  std::string role;  // "user" | "assistant"
  std::string content;
};

struct ChatRequest {
  std::string system;
  std::vector<ChatMessage> messages;
  // Structured output: servers that support it constrain the reply to this schema
  // (response_format json_schema / a forced tool); the client validates it anyway.
  const JsonSchema* schema = nullptr;
  int max_output_tokens = 1024;
  double temperature = 0.2;
  // CLI backends: the directory the agent works in (a worktree); empty: a temp dir.
  std::string workdir;
  // Total characters of the prompt (for the worst-case token estimate).
  size_t PromptChars() const;
  // The whole request as one text (for CLIs and transcripts).
  std::string Flatten() const;
};

struct ChatReply {
  std::string text;          // the model's reply (a CLI's final message)
  Usage usage;
  std::string model;         // as reported by the server
  std::string finish_reason;
};

enum class FailureClass { kRetryable, kCredentials, kFatal };
std::string_view FailureClassName(FailureClass c);
// The class of a backend error (from its "failure" context; kFatal when absent).
FailureClass FailureOf(const Error& e);
// Tags an error with its class.
Error Classified(Error e, FailureClass c);
// The usual classification of an HTTP status: 401/403 credentials, 408/409/429/5xx
// retryable, anything else fatal. The body head (redacted by the caller) goes into
// the message.
Error HttpError(const std::string& backend, int status, const std::string& body_head,
                const std::string& retry_after);
// Transport errors (refused, reset, timeout) are retryable.
Error TransportFailure(const std::string& backend, Error e);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;   // "openai:<model>@<host>", "cli:claude"
  virtual std::string kind() const = 0;   // openai | anthropic | cli
  virtual std::string model() const = 0;
  // One attempt. See the file comment for the error classes.
  virtual Result<ChatReply> Complete(const ChatRequest& request) = 0;
  // The most this request can cost (checked against the cap before sending).
  virtual Usage WorstCase(const ChatRequest& request) const = 0;
};

}  // namespace hone::agent
