// The OpenAI-compatible wire format, at the edge: request bodies for
// /v1/completions and /v1/chat/completions, and a streaming response handler that
// turns SSE events into a RequestRecord.
//
// StreamHandler is the hot path of the load generator: per SSE event it does a
// targeted scan for non-empty content ("text", "content", "reasoning_content")
// instead of a full JSON parse; only events carrying "usage" or "error" (one per
// stream) are parsed fully. It follows the reference definitions: TTFT at the first
// non-empty content chunk, E2EL at the last content chunk (the usage chunk excluded),
// OSL from usage.completion_tokens (else the content-chunk count, flagged as such).
// One handler per request; it runs on the HttpLoop's thread.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "bench/record.h"
#include "net/http.h"
#include "net/prometheus.h"
#include "net/sse.h"

namespace hone::bench {

// What the benchmark needs to know about the server it drives.
struct ServerProfile {
  std::string framework = "generic";  // llama.cpp | vllm | sglang | generic
  std::string model_name;             // the request's "model" field (empty: omitted)
  // Extra body fields that force exact output lengths, as JSON literals
  // (llama.cpp: {"ignore_eos": "true"}; SGLang also min_tokens).
  std::map<std::string, std::string> exact_length_fields = {{"ignore_eos", "true"}};
  bool send_min_tokens = false;       // vLLM/SGLang: also send min_tokens = max_tokens
  net::ServingMetricNames metrics;
};

std::string BuildRequestBody(const RequestSpec& spec, const ServerProfile& profile);

class StreamHandler final : public net::ResponseHandler {
 public:
  using DoneCallback = std::function<void(StreamHandler&)>;
  // `context_limit`: the server's per-slot context (0 = unknown); a request whose
  // prompt + forced output exceeds it and fails or comes back short is a
  // context_overflow, not an output-length mismatch.
  StreamHandler(RequestRecord record, DoneCallback on_done, int64_t context_limit = 0);

  void OnHeaders(int status, const net::Headers& headers, int64_t recv_ns) override;
  void OnBody(std::string_view data, int64_t recv_ns) override;
  void OnDone(net::TransportError error, std::string_view detail, int64_t end_ns) override;

  RequestRecord& record() { return record_; }

 private:
  void OnEvent(std::string_view data, int64_t recv_ns);
  void SetError(ErrorCategory c, std::string detail);

  RequestRecord record_;
  DoneCallback on_done_;
  int64_t context_limit_ = 0;
  net::SseParser sse_;
  std::string error_body_;  // non-200 response body (first 2 KiB)
  bool saw_done_ = false;
  bool saw_usage_ = false;
  int64_t small_reads_ = 0;  // body pieces of a 200 response under 16 bytes
  int64_t events_ = 0;
};

// Classifies a non-200 response into a category (429, 500, 503, context overflow ...).
ErrorCategory CategorizeHttpStatus(int status, std::string_view body);

}  // namespace hone::bench
