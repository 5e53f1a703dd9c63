#include "agent/backend.h"

#include "agent/text.h"
#include "core/strings.h"

namespace hone::agent {

size_t ChatRequest::PromptChars() const {
  size_t n = system.size();
  for (const auto& m : messages) n += m.content.size();
  if (schema) n += schema->json().dump().size();
  return n;
}

std::string ChatRequest::Flatten() const {
  std::string out;
  if (!system.empty()) out += system + "\n\n";
  for (size_t i = 0; i < messages.size(); ++i) {
    if (messages.size() > 1) out += "[" + messages[i].role + "]\n";
    out += messages[i].content + "\n\n";
  }
  if (schema) out += "Reply with only a JSON object that matches this JSON schema:\n" + schema->json().dump() + "\n";
  return out;
}

std::string_view FailureClassName(FailureClass c) {
  switch (c) {
    case FailureClass::kRetryable: return "retryable";
    case FailureClass::kCredentials: return "credentials";
    case FailureClass::kFatal: return "fatal";
  }
  return "fatal";
}

FailureClass FailureOf(const Error& e) {
  std::string_view f = e.Get("failure");
  if (f == "retryable") return FailureClass::kRetryable;
  if (f == "credentials") return FailureClass::kCredentials;
  return FailureClass::kFatal;
}

Error Classified(Error e, FailureClass c) {
  for (auto& [k, v] : e.context) {
    if (k == "failure") {
      v = std::string(FailureClassName(c));
      return e;
    }
  }
  e.context.emplace_back("failure", std::string(FailureClassName(c)));
  return e;
}

Error HttpError(const std::string& backend, int status, const std::string& body_head, const std::string& retry_after) {
  FailureClass c = FailureClass::kFatal;
  ErrorCode code = ErrorCode::kFailedPrecondition;
  if (status == 401 || status == 403) {
    c = FailureClass::kCredentials;
    code = ErrorCode::kPermissionDenied;
  } else if (status == 408 || status == 409 || status == 429 || status >= 500) {
    c = FailureClass::kRetryable;
    code = status == 429 ? ErrorCode::kResourceExhausted : ErrorCode::kUnavailable;
  } else if (status == 400 || status == 404 || status == 422) {
    code = ErrorCode::kInvalidArgument;
  }
  std::string head = body_head.size() > 300 ? ClipUtf8(body_head, 300) + "..." : SanitizeUtf8(body_head);
  head = ReplaceAll(ReplaceAll(head, "\r", " "), "\n", " ");
  Error e{code, backend + ": HTTP " + std::to_string(status) + (head.empty() ? "" : ": " + head), {}};
  e.With("http_status", std::to_string(status));
  if (!retry_after.empty()) e.With("retry_after_s", retry_after);
  return Classified(std::move(e), c);
}

Error TransportFailure(const std::string& backend, Error e) {
  bool retryable = e.code == ErrorCode::kUnavailable || e.code == ErrorCode::kDeadlineExceeded ||
                   e.code == ErrorCode::kDataLoss;
  Error out = std::move(e).Wrap(backend);
  return Classified(std::move(out), retryable ? FailureClass::kRetryable : FailureClass::kFatal);
}

}  // namespace hone::agent
