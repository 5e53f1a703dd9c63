// Transport: the HTTP seam of the agent layer (POST a JSON body, get the response).
//
// RealTransport sends http:// requests with net::Fetch (hone's own client) and
// https:// requests (api.anthropic.com, api.openai.com) with libcurl when hone was
// built with it (scripts/setup.sh installs libcurl4-openssl-dev); without libcurl an
// https URL is a kUnavailable error that says so. Transport failures are errors with
// code kUnavailable (refused/reset/DNS), kDeadlineExceeded (timeout) or kDataLoss; an
// HTTP error status is a response, not an error. Request headers (which carry keys)
// are never part of an error. RealTransport is stateless and thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/error.h"
#include "net/http.h"

namespace hone::agent {

struct TransportRequest {
  std::string url;     // http://host:port/path or https://host/path
  net::Headers headers;
  std::string body;    // JSON
  std::chrono::milliseconds timeout{120'000};
};

struct TransportResponse {
  int status = 0;
  net::Headers headers;
  std::string body;
  std::string Header(std::string_view name) const;  // case-insensitive; "" if absent
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual Result<TransportResponse> Post(const TransportRequest& request) = 0;
};

class RealTransport final : public Transport {
 public:
  Result<TransportResponse> Post(const TransportRequest& request) override;
};

// Whether https:// URLs can be reached (hone was built with libcurl).
bool HttpsSupported();
// The libcurl path itself, for any http(s) URL (tests drive it over loopback http).
// kUnavailable without libcurl.
Result<TransportResponse> PostWithCurl(const TransportRequest& request);
// Whether `url` points at this machine (127.0.0.0/8, localhost, ::1): local servers
// cost nothing and need no key.
bool IsLoopbackUrl(const std::string& url);

}  // namespace hone::agent
