// LlmClient: how every role talks to a backend. It adds to a backend's single attempt
// everything a session needs to trust and bound LLM use:
//
//   - the spending cap: each attempt is admitted by the shared UsageMeter first (its
//     worst case must fit), and its actual usage is recorded after;
//   - retries with exponential backoff (honouring Retry-After, capped) for retryable
//     failures: 429, 5xx, refused/reset connections, timeouts, unparseable bodies;
//   - the credential stop: a 401/403 (or a CLI's login failure, or a missing key)
//     disables this backend for the rest of the session at once. It is reported once
//     through on_event, and later calls fail immediately without touching the network
//     (the anchor idled a whole budget retrying a 401);
//   - structured replies: Structured() extracts the JSON object from the reply, parses
//     it and validates it against the role's schema (and an optional role check); an
//     invalid reply is a recorded Rejection and is re-asked with the violations, at
//     most retry.max_invalid_replies times;
//   - the transcript (every attempt, redacted) and redaction of every error.
//
// Numbers in a reply are never results: callers carry them as claims. The clock is
// the sys::Clock seam (backoff sleeps; tests use FakeClock). Thread-safe: calls are
// serialized by a mutex. The backend, meter, clock, redactor and transcript must
// outlive the client.
#pragma once

#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/backend.h"
#include "agent/json_schema.h"
#include "agent/secrets.h"
#include "agent/settings.h"
#include "agent/transcript.h"
#include "agent/usage.h"
#include "sys/clock.h"

namespace hone::agent {

// A reply that was not accepted, as data (kept for the report).
struct Rejection {
  std::string role;
  std::string backend;
  std::string kind;    // malformed_json | schema_violation | role_check
  std::string detail;  // one line
  int attempt = 0;
};

struct StructuredReply {
  nlohmann::json value;  // schema-valid
  std::string text;      // the raw reply it came from
  Usage usage;           // summed over every attempt of this request
  int attempts = 0;
  std::vector<Rejection> rejections;  // the invalid replies before this one
};

// A role's own check of a schema-valid reply: "" accepts, otherwise one line saying
// what is wrong (sent back to the model).
using ReplyCheck = std::function<std::string(const nlohmann::json&)>;

struct ClientOptions {
  RetryPolicy retry;
  std::function<void(const std::string& line)> on_event;  // one-line reports, e.g. the credential stop
};

class LlmClient {
 public:
  LlmClient(Backend& backend, UsageMeter& meter, sys::Clock& clock, const Redactor& redactor,
            Transcript* transcript, ClientOptions options)
      : backend_(backend), meter_(meter), clock_(clock), redactor_(redactor), transcript_(transcript),
        options_(std::move(options)) {}
  LlmClient(const LlmClient&) = delete;
  LlmClient& operator=(const LlmClient&) = delete;

  // One request with retries. Errors: kPermissionDenied (credentials; the backend is
  // now disabled), kResourceExhausted (the cap refused it), or the last attempt's error.
  Result<ChatReply> Chat(const std::string& role, const ChatRequest& request);
  // A request whose reply must be one JSON object matching `schema` (and `check`).
  // kInvalidArgument (context "rejected" = count) when every re-ask was invalid too.
  Result<StructuredReply> Structured(const std::string& role, ChatRequest request, const JsonSchema& schema,
                                     const ReplyCheck& check = nullptr);

  bool disabled() const;
  std::string disabled_reason() const;
  std::vector<Rejection> rejections() const;
  // The one-line reports made so far (credential stop, cap reached).
  std::vector<std::string> events() const;
  Backend& backend() { return backend_; }
  UsageMeter& meter() { return meter_; }
  const Redactor& redactor() const { return redactor_; }

 private:
  void Report(const std::string& line);  // REQUIRES state_mu_ not held
  void Log(const std::string& role, int attempt, const std::string& outcome, const std::string& prompt,
           const std::string& reply, const std::string& detail, const Usage& usage);

  Backend& backend_;
  UsageMeter& meter_;
  sys::Clock& clock_;
  const Redactor& redactor_;
  Transcript* transcript_;
  ClientOptions options_;
  std::mutex call_mu_;  // serializes calls
  mutable std::mutex state_mu_;
  bool disabled_ = false;            // GUARDED_BY(state_mu_)
  std::string disabled_reason_;      // GUARDED_BY(state_mu_)
  bool cap_reported_ = false;        // GUARDED_BY(state_mu_)
  std::vector<Rejection> rejections_;  // GUARDED_BY(state_mu_)
  std::vector<std::string> events_;    // GUARDED_BY(state_mu_)
};

// The JSON object in a reply: the whole text, a ```json fenced block, or the span
// from the first '{' to the last '}'. kInvalidArgument naming the parse error.
Result<nlohmann::json> ExtractJson(const std::string& text);

}  // namespace hone::agent
