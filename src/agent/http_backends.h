// The two HTTP backends: OpenAI-compatible chat completions and the Anthropic
// Messages API.
//
// OpenAiBackend posts to <base_url>/chat/completions. It serves OpenAI itself and
// every local OpenAI-compatible server (llama-server, vLLM, SGLang): the key is
// optional (local servers need none), and a request with a schema asks for
// "response_format": {"type": "json_schema", ...}, which llama-server turns into a
// grammar, so even a nonsense model answers in shape. AnthropicBackend posts to
// <base_url>/v1/messages with x-api-key and anthropic-version headers; a schema
// becomes a single tool the model is forced to call, whose input is the reply.
//
// Both make one attempt per Complete() (client.h retries), report usage from the
// response (estimated when absent) priced with the model's ModelPrice, classify
// failures (backend.h) and redact everything a server sends back before it can reach
// an error message. They hold a reference to the Transport and Redactor, which must
// outlive them. Not thread-safe.
#pragma once

#include <chrono>
#include <string>

#include "agent/backend.h"
#include "agent/secrets.h"
#include "agent/transport.h"
#include "net/http.h"

namespace hone::agent {

struct HttpBackendOptions {
  std::string base_url;  // openai: "http://127.0.0.1:8080/v1"; anthropic: "https://api.anthropic.com"
  std::string model;
  Secret key;            // empty: no credential header (local servers)
  ModelPrice price;
  double chars_per_token = 3.0;
  std::chrono::milliseconds timeout{120'000};
  // openai: "max_tokens" (llama-server, vLLM, SGLang) or "max_completion_tokens" (OpenAI).
  std::string max_tokens_field = "max_tokens";
  std::string anthropic_version = "2023-06-01";
};

class OpenAiBackend final : public Backend {
 public:
  OpenAiBackend(HttpBackendOptions options, Transport& transport, const Redactor& redactor)
      : options_(std::move(options)), transport_(transport), redactor_(redactor) {}
  std::string name() const override;
  std::string kind() const override { return "openai"; }
  std::string model() const override { return options_.model; }
  Result<ChatReply> Complete(const ChatRequest& request) override;
  Usage WorstCase(const ChatRequest& request) const override;

  // The JSON body sent for `request` (exposed for tests).
  std::string RequestBody(const ChatRequest& request) const;

 private:
  HttpBackendOptions options_;
  Transport& transport_;
  const Redactor& redactor_;
};

class AnthropicBackend final : public Backend {
 public:
  AnthropicBackend(HttpBackendOptions options, Transport& transport, const Redactor& redactor)
      : options_(std::move(options)), transport_(transport), redactor_(redactor) {}
  std::string name() const override;
  std::string kind() const override { return "anthropic"; }
  std::string model() const override { return options_.model; }
  Result<ChatReply> Complete(const ChatRequest& request) override;
  Usage WorstCase(const ChatRequest& request) const override;

  std::string RequestBody(const ChatRequest& request) const;

 private:
  HttpBackendOptions options_;
  Transport& transport_;
  const Redactor& redactor_;
};

// The worst case of a request: estimated prompt tokens plus the output limit, priced.
Usage WorstCaseOf(const ChatRequest& request, const ModelPrice& price, double chars_per_token);

}  // namespace hone::agent
