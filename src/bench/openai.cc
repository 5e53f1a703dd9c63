#include "bench/openai.h"

#include <nlohmann/json.hpp>

#include "core/strings.h"

namespace hone::bench {

using json = nlohmann::json;

std::string BuildRequestBody(const RequestSpec& spec, const ServerProfile& profile) {
  json body;
  if (!profile.model_name.empty()) body["model"] = profile.model_name;
  if (spec.endpoint == Endpoint::kChat) {
    json messages = json::array();
    for (const Message& m : spec.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
    body["messages"] = std::move(messages);
    body["max_completion_tokens"] = spec.max_tokens;
  } else if (!spec.prompt_ids.empty()) {
    body["prompt"] = spec.prompt_ids;
  } else {
    body["prompt"] = spec.prompt_text;
  }
  body["max_tokens"] = spec.max_tokens;
  if (profile.send_min_tokens) body["min_tokens"] = spec.max_tokens;
  body["temperature"] = 0;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  for (const auto& [k, v] : profile.exact_length_fields) {
    json parsed = json::parse(v, nullptr, false);
    body[k] = parsed.is_discarded() ? json(v) : parsed;
  }
  return body.dump();
}

ErrorCategory CategorizeHttpStatus(int status, std::string_view body) {
  std::string lower = ToLower(body.substr(0, 2048));
  if (status == 400 && (Contains(lower, "context") || Contains(lower, "too long") || Contains(lower, "exceed"))) {
    return ErrorCategory::kContextOverflow;
  }
  if (status == 429) return ErrorCategory::kHttp429;
  if (status == 500) return ErrorCategory::kHttp500;
  if (status == 503) return ErrorCategory::kHttp503;
  if (status >= 500) return ErrorCategory::kHttp5xx;
  return ErrorCategory::kHttp4xx;
}

StreamHandler::StreamHandler(RequestRecord record, DoneCallback on_done, int64_t context_limit)
    : record_(std::move(record)),
      on_done_(std::move(on_done)),
      context_limit_(context_limit),
      sse_([this](std::string_view data, int64_t t) { OnEvent(data, t); }) {}

void StreamHandler::OnHeaders(int status, const net::Headers&, int64_t) { record_.http_status = status; }

void StreamHandler::OnBody(std::string_view data, int64_t recv_ns) {
  if (record_.http_status != 200) {
    if (error_body_.size() < 2048) error_body_.append(data.substr(0, 2048 - error_body_.size()));
    return;
  }
  if (data.size() < 16) ++small_reads_;
  if (!sse_.Feed(data, recv_ns) && record_.ok()) SetError(ErrorCategory::kMalformed, "SSE event too large");
}

void StreamHandler::SetError(ErrorCategory c, std::string detail) {
  if (record_.error != ErrorCategory::kNone) return;  // the first cause wins
  record_.error = c;
  record_.error_detail = std::move(detail);
}

namespace {

// True when `key` ("\"text\":\"") occurs in `data` with a non-empty string value.
bool HasNonEmptyString(std::string_view data, std::string_view key) {
  size_t pos = 0;
  while ((pos = data.find(key, pos)) != std::string_view::npos) {
    pos += key.size();
    if (pos < data.size() && data[pos] != '"') return true;
  }
  return false;
}

}  // namespace

void StreamHandler::OnEvent(std::string_view data, int64_t recv_ns) {
  ++events_;
  if (data == "[DONE]") {
    saw_done_ = true;
    return;
  }
  std::string_view t = Trim(data);
  if (t.empty() || t.front() != '{' || t.back() != '}') {
    SetError(ErrorCategory::kMalformed, "not a JSON event: " + std::string(t.substr(0, 80)));
    return;
  }
  // Rare events (usage at the end, errors) get a full parse; content chunks a scan.
  const bool has_usage = Contains(t, "\"usage\":{") || Contains(t, "\"usage\": {");
  const bool has_error = Contains(t, "\"error\"");
  if (has_usage || has_error) {
    json ev = json::parse(t, nullptr, false);
    if (ev.is_discarded()) {
      SetError(ErrorCategory::kMalformed, "invalid JSON event: " + std::string(t.substr(0, 80)));
      return;
    }
    if (ev.contains("error") && !ev["error"].is_null()) {
      SetError(ErrorCategory::kStreamError, ev["error"].dump().substr(0, 200));
      return;
    }
    if (ev.contains("usage") && ev["usage"].is_object()) {
      const json& u = ev["usage"];
      record_.isl = u.value("prompt_tokens", record_.isl);
      record_.osl = u.value("completion_tokens", record_.osl);
      if (u.contains("prompt_tokens_details") && u["prompt_tokens_details"].is_object()) {
        record_.cached_tokens = u["prompt_tokens_details"].value("cached_tokens", record_.cached_tokens);
      }
      saw_usage_ = true;
    }
    if (record_.cached_tokens < 0 && ev.contains("timings") && ev["timings"].is_object()) {
      record_.cached_tokens = ev["timings"].value("cache_n", int64_t{-1});
    }
  }
  if (HasNonEmptyString(t, "\"text\":\"") || HasNonEmptyString(t, "\"content\":\"") ||
      HasNonEmptyString(t, "\"reasoning_content\":\"")) {
    if (record_.t_first_ns == 0) record_.t_first_ns = recv_ns;
    record_.t_last_ns = recv_ns;
    record_.chunk_ns.push_back(recv_ns);
  }
}

void StreamHandler::OnDone(net::TransportError error, std::string_view detail, int64_t end_ns) {
  record_.t_end_ns = end_ns;
  using TE = net::TransportError;
  switch (error) {
    case TE::kNone: break;
    case TE::kConnectRefused: SetError(ErrorCategory::kConnectionRefused, std::string(detail)); break;
    case TE::kConnectionReset: SetError(ErrorCategory::kConnectionReset, std::string(detail)); break;
    case TE::kStalled: SetError(ErrorCategory::kStalled, std::string(detail)); break;
    case TE::kTotalTimeout: SetError(ErrorCategory::kTimeout, std::string(detail)); break;
    case TE::kTruncated: SetError(ErrorCategory::kTruncated, std::string(detail)); break;
    case TE::kBadResponse: SetError(ErrorCategory::kMalformed, std::string(detail)); break;
    case TE::kCancelled: SetError(ErrorCategory::kCancelled, std::string(detail)); break;
    case TE::kInternal: SetError(ErrorCategory::kConnectionReset, std::string(detail)); break;
  }
  if (record_.http_status != 0 && record_.http_status != 200) {
    SetError(CategorizeHttpStatus(record_.http_status, error_body_),
             "HTTP " + std::to_string(record_.http_status) + ": " + std::string(Trim(error_body_.substr(0, 200))));
  }
  if (record_.ok() && !saw_done_) {
    SetError(ErrorCategory::kTruncated, sse_.HasPartialEvent() ? "stream cut inside an event" : "stream ended without [DONE]");
  }
  if (record_.ok() && record_.chunk_ns.empty() && record_.osl_expected > 0) {
    SetError(ErrorCategory::kNoContent, "no content chunk in a complete stream");
  }
  // A server sends each event in one write; a response that came in many more reads
  // of a few bytes than it has events was dripped (slow-loris): its timings are the
  // drip's, not the engine's.
  if (record_.ok() && small_reads_ >= 16 && small_reads_ >= 2 * (events_ + 2)) {
    SetError(ErrorCategory::kSlowStream,
             std::to_string(small_reads_) + " reads of a few bytes for " + std::to_string(events_) + " events");
  }
  if (saw_usage_) {
    record_.count_source = CountSource::kUsage;
  } else {
    record_.count_source = CountSource::kChunks;
    record_.osl = static_cast<int64_t>(record_.chunk_ns.size());
    if (record_.isl == 0) record_.count_source = CountSource::kChunks;
  }
  const int64_t prompt = record_.isl > 0 ? record_.isl : record_.isl_expected;
  if (context_limit_ > 0 && record_.osl_expected > 0 && prompt + record_.osl_expected > context_limit_ &&
      (!record_.ok() || record_.osl != record_.osl_expected)) {
    // Whatever shape the server gave it (a 400, an error event, output stopped at the
    // end of the context), the cause is the slot's size.
    record_.error = ErrorCategory::kContextOverflow;
    record_.error_detail = "prompt " + std::to_string(prompt) + " + max_tokens " + std::to_string(record_.osl_expected) +
                           " > slot context " + std::to_string(context_limit_) +
                           (record_.error_detail.empty() ? "" : " (" + record_.error_detail.substr(0, 120) + ")");
  }
  if (record_.ok() && record_.osl_expected > 0 && record_.osl != record_.osl_expected) record_.osl_mismatch = true;
  if (on_done_) on_done_(*this);
}

}  // namespace hone::bench
