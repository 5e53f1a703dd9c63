#include "agent/client.h"

#include <algorithm>
#include <cmath>

#include "agent/text.h"
#include "core/strings.h"

namespace hone::agent {

using json = nlohmann::json;

Result<json> ExtractJson(const std::string& text) {
  std::string_view t = Trim(text);
  std::string body(t);
  if (t.starts_with("```")) {
    size_t nl = t.find('\n');
    size_t end = t.rfind("```");
    if (nl != std::string_view::npos && end != std::string_view::npos && end > nl) {
      body = std::string(t.substr(nl + 1, end - nl - 1));
    }
  } else if (!t.starts_with("{")) {
    size_t open = t.find('{');
    size_t close = t.rfind('}');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
      return InvalidArgument("no JSON object in the reply");
    }
    body = std::string(t.substr(open, close - open + 1));
  }
  auto j = TryCatch(ErrorCode::kInvalidArgument, "reply is not valid JSON", [&] { return json::parse(body); });
  if (!j) return j;
  if (!j->is_object()) return InvalidArgument("reply is JSON but not an object");
  return j;
}

bool LlmClient::disabled() const {
  std::lock_guard<std::mutex> lock(state_mu_);
  return disabled_;
}

std::string LlmClient::disabled_reason() const {
  std::lock_guard<std::mutex> lock(state_mu_);
  return disabled_reason_;
}

std::vector<Rejection> LlmClient::rejections() const {
  std::lock_guard<std::mutex> lock(state_mu_);
  return rejections_;
}

std::vector<std::string> LlmClient::events() const {
  std::lock_guard<std::mutex> lock(state_mu_);
  return events_;
}

void LlmClient::Report(const std::string& line) {
  std::string l = redactor_.Redact(line);
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    events_.push_back(l);
  }
  if (options_.on_event) options_.on_event(l);
}

void LlmClient::Log(const std::string& role, int attempt, const std::string& outcome, const std::string& prompt,
                    const std::string& reply, const std::string& detail, const Usage& usage) {
  if (!transcript_) return;
  // A transcript that cannot be written must not stop the session: the call happened.
  (void)transcript_->Append({role, backend_.name(), attempt, outcome, prompt, reply, detail, usage});
}

Result<ChatReply> LlmClient::Chat(const std::string& role, const ChatRequest& request) {
  std::lock_guard<std::mutex> call(call_mu_);
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (disabled_) {
      return Fail(Classified(Error{ErrorCode::kPermissionDenied,
                                   backend_.name() + " is disabled for this session: " + disabled_reason_, {}},
                             FailureClass::kCredentials));
    }
  }
  const RetryPolicy& rp = options_.retry;
  int max_attempts = std::max(1, rp.max_attempts);
  std::string prompt = request.Flatten();
  Error last{ErrorCode::kInternal, "no attempt made", {}};
  for (int attempt = 1; attempt <= max_attempts; ++attempt) {
    Usage worst = backend_.WorstCase(request);
    if (auto admit = meter_.Admit(role, worst); !admit) {
      Error e = std::move(admit).error();
      Log(role, attempt, "refused", prompt, "", e.message, {});
      bool first = false;
      {
        std::lock_guard<std::mutex> lock(state_mu_);
        first = !cap_reported_;
        cap_reported_ = true;
      }
      if (first) Report("agent calls stopped: " + e.message + " (" + meter_.Summary() + ")");
      return Fail(std::move(e));
    }
    auto reply = backend_.Complete(request);
    if (reply) {
      meter_.Record(role, reply->usage);
      reply->text = redactor_.Redact(reply->text);
      Log(role, attempt, "ok", prompt, reply->text, reply->finish_reason, reply->usage);
      return reply;
    }
    Error e = redactor_.Redact(std::move(reply).error());
    FailureClass c = FailureOf(e);
    Log(role, attempt, "error", prompt, "", e.ToString(), {});
    if (c == FailureClass::kCredentials) {
      {
        std::lock_guard<std::mutex> lock(state_mu_);
        disabled_ = true;
        disabled_reason_ = e.message;
      }
      Report("agent backend " + backend_.name() + ": credentials rejected (" + e.message +
             "); not used again this session");
      e.code = ErrorCode::kPermissionDenied;
      return Fail(std::move(e));
    }
    if (c == FailureClass::kFatal) return Fail(std::move(e));
    last = std::move(e);
    if (attempt == max_attempts) break;
    double backoff = std::min(rp.backoff_max_s, rp.backoff_initial_s * std::pow(rp.backoff_multiplier, attempt - 1));
    if (auto ra = ParseDouble(last.Get("retry_after_s")); ra && *ra > 0) {
      backoff = std::min(rp.backoff_max_s, std::max(backoff, *ra));
    }
    clock_.SleepFor(std::chrono::nanoseconds(static_cast<int64_t>(backoff * 1e9)));
  }
  return Fail(std::move(last).Wrap("after " + std::to_string(max_attempts) + " attempts"));
}

Result<StructuredReply> LlmClient::Structured(const std::string& role, ChatRequest request, const JsonSchema& schema,
                                              const ReplyCheck& check) {
  request.schema = &schema;
  StructuredReply out;
  int max_asks = 1 + std::max(0, options_.retry.max_invalid_replies);
  std::string last_detail;
  for (int ask = 1; ask <= max_asks; ++ask) {
    HONE_ASSIGN_OR_RETURN(ChatReply reply, Chat(role, request));
    out.attempts = ask;
    out.usage.input_tokens += reply.usage.input_tokens;
    out.usage.output_tokens += reply.usage.output_tokens;
    out.usage.cost_usd += reply.usage.cost_usd;
    out.usage.estimated = out.usage.estimated || reply.usage.estimated;
    Rejection rej{role, backend_.name(), "", "", ask};
    auto parsed = ExtractJson(reply.text);
    if (!parsed) {
      rej.kind = "malformed_json";
      rej.detail = parsed.error().message;
      if (reply.finish_reason == "length") rej.detail += " (the reply hit the output token limit)";
    } else if (auto v = schema.Validate(*parsed); !v.empty()) {
      rej.kind = "schema_violation";
      rej.detail = JoinViolations(v);
    } else if (std::string problem = check ? check(*parsed) : ""; !problem.empty()) {
      rej.kind = "role_check";
      rej.detail = problem;
    } else {
      out.value = std::move(*parsed);
      out.text = reply.text;
      return out;
    }
    rej.detail = redactor_.Redact(rej.detail);
    last_detail = rej.kind + ": " + rej.detail;
    Log(role, ask, "rejected", "", reply.text, last_detail, {});
    {
      std::lock_guard<std::mutex> lock(state_mu_);
      rejections_.push_back(rej);
    }
    out.rejections.push_back(rej);
    std::string echo = ClipUtf8(reply.text, 2000);
    request.messages.push_back({"assistant", echo.empty() ? "(empty reply)" : echo});
    request.messages.push_back({"user", "Your reply was rejected (" + last_detail +
                                            "). Reply again with only one JSON object that matches the schema."});
  }
  Error e{ErrorCode::kInvalidArgument,
          backend_.name() + ": " + std::to_string(max_asks) + " invalid replies for the " + role + "; last: " + last_detail,
          {}};
  e.With("rejected", std::to_string(max_asks));
  return Fail(Classified(std::move(e), FailureClass::kFatal));
}

}  // namespace hone::agent
