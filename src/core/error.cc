#include "core/error.h"

namespace hone {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kAlreadyExists: return "already_exists";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kDeadlineExceeded: return "deadline_exceeded";
    case ErrorCode::kFailedPrecondition: return "failed_precondition";
    case ErrorCode::kPermissionDenied: return "permission_denied";
    case ErrorCode::kCancelled: return "cancelled";
    case ErrorCode::kResourceExhausted: return "resource_exhausted";
    case ErrorCode::kDataLoss: return "data_loss";
    case ErrorCode::kInternal: return "internal";
  }
  return "unknown";
}

Error& Error::With(std::string key, std::string value) & {
  context.emplace_back(std::move(key), std::move(value));
  return *this;
}

Error&& Error::With(std::string key, std::string value) && {
  context.emplace_back(std::move(key), std::move(value));
  return std::move(*this);
}

Error&& Error::Wrap(std::string_view prefix) && {
  message = std::string(prefix) + ": " + message;
  return std::move(*this);
}

std::string_view Error::Get(std::string_view key) const {
  for (const auto& [k, v] : context) {
    if (k == key) return v;
  }
  return {};
}

std::string Error::ToString() const {
  std::string out = message;
  if (context.empty()) return out;
  out += " [";
  for (size_t i = 0; i < context.size(); ++i) {
    if (i) out += ", ";
    out += context[i].first;
    out += '=';
    // Keep the error on one line: multi-line values (log excerpts) are flattened.
    for (char c : context[i].second) out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  out += ']';
  return out;
}

}  // namespace hone
