#include "bench/record.h"

namespace hone::bench {

std::string_view EndpointPath(Endpoint e) {
  return e == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions";
}

std::string_view ErrorCategoryName(ErrorCategory c) {
  switch (c) {
    case ErrorCategory::kNone: return "none";
    case ErrorCategory::kConnectionRefused: return "connection_refused";
    case ErrorCategory::kConnectionReset: return "connection_reset";
    case ErrorCategory::kStalled: return "stalled";
    case ErrorCategory::kTimeout: return "timeout";
    case ErrorCategory::kTruncated: return "truncated";
    case ErrorCategory::kMalformed: return "malformed";
    case ErrorCategory::kHttp429: return "http_429";
    case ErrorCategory::kHttp500: return "http_500";
    case ErrorCategory::kHttp503: return "http_503";
    case ErrorCategory::kHttp4xx: return "http_4xx";
    case ErrorCategory::kHttp5xx: return "http_5xx";
    case ErrorCategory::kContextOverflow: return "context_overflow";
    case ErrorCategory::kStreamError: return "stream_error";
    case ErrorCategory::kNoContent: return "no_content";
    case ErrorCategory::kSlowStream: return "slow_stream";
    case ErrorCategory::kCancelled: return "cancelled";
  }
  return "unknown";
}

std::string_view CountSourceName(CountSource s) {
  switch (s) {
    case CountSource::kUsage: return "usage";
    case CountSource::kChunks: return "chunks";
    case CountSource::kClient: return "client";
  }
  return "unknown";
}

}  // namespace hone::bench
