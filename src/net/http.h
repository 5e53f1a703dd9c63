// HTTP/1.1 client for loopback serving endpoints: an event loop that drives many
// concurrent requests from one thread, plus blocking helpers built on it.
//
// HttpLoop (epoll, non-blocking sockets) owns its connections. Each request gets a
// fresh TCP connection ("Connection: close"), its body is decoded (Content-Length,
// chunked, or until close) and handed to the request's handler as it arrives, each
// piece stamped with the monotonic time of the read() that produced it. Transport
// failures are outcomes (TransportError), not exceptions: a refused connection, a
// reset, a stall past the idle timeout, a truncated body, a malformed response.
// Only plain http:// is supported (hone talks to servers on 127.0.0.1).
//
// Thread-safety: an HttpLoop and its handlers run on the thread that calls Run*.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.h"

namespace hone::net {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Url {
  std::string host = "127.0.0.1";
  int port = 80;
  std::string path = "/";  // base path, no trailing slash unless "/"
};
// Parses "http://host:port/path". Anything else is kInvalidArgument.
Result<Url> ParseUrl(std::string_view text);

struct HttpRequest {
  std::string method = "GET";
  std::string host = "127.0.0.1";
  int port = 80;
  std::string path = "/";
  Headers headers;
  std::string body;
};

enum class TransportError {
  kNone,
  kConnectRefused,
  kConnectionReset,
  kStalled,        // no bytes for longer than the idle timeout
  kTotalTimeout,   // the whole request took longer than its limit
  kTruncated,      // the connection closed before the body was complete
  kBadResponse,    // not parseable as HTTP/1.x
  kCancelled,
  kInternal,
};
std::string_view TransportErrorName(TransportError e);

// Receives one request's events. All callbacks run on the loop's thread.
class ResponseHandler {
 public:
  virtual ~ResponseHandler() = default;
  // Called once, when the status line and headers are in.
  virtual void OnHeaders(int /*status*/, const Headers& /*headers*/, int64_t /*recv_ns*/) {}
  // Called for each piece of decoded body, in order.
  virtual void OnBody(std::string_view data, int64_t recv_ns) = 0;
  // Called exactly once at the end, successful or not.
  virtual void OnDone(TransportError error, std::string_view detail, int64_t end_ns) = 0;
};

struct RequestLimits {
  std::chrono::milliseconds idle_timeout{60'000};   // max gap between bytes
  std::chrono::milliseconds total_timeout{600'000};
};

class HttpLoop {
 public:
  static Result<std::unique_ptr<HttpLoop>> Create();
  ~HttpLoop();
  HttpLoop(const HttpLoop&) = delete;
  HttpLoop& operator=(const HttpLoop&) = delete;

  // Starts a request now; `handler` must outlive it (until OnDone). Returns its id.
  // The send timestamp (monotonic ns, just before connect) is returned via send_ns.
  uint64_t Submit(const HttpRequest& request, ResponseHandler* handler, RequestLimits limits,
                  int64_t* send_ns = nullptr);
  // Aborts a request; its handler gets OnDone(kCancelled).
  void Cancel(uint64_t id);
  // Aborts every request (their handlers must still be alive).
  void CancelAll();
  // Runs one round: waits up to `max_wait_ms` for I/O, processes it, enforces timeouts.
  void RunOnce(int max_wait_ms);
  // Runs until no request is active (or `deadline_ns` passes, monotonic).
  void RunUntilIdle(int64_t deadline_ns = INT64_MAX);
  size_t active() const { return conns_.size(); }

  static int64_t NowNs();

 private:
  struct Conn;
  explicit HttpLoop(int epfd);
  void HandleEvent(Conn& c, uint32_t events);
  bool Flush(Conn& c);
  bool ReadSome(Conn& c);
  bool Consume(Conn& c, int64_t now);  // false when the request ended
  void Finish(uint64_t id, TransportError error, std::string detail);

  int epfd_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
};

struct HttpResponse {
  int status = 0;
  Headers headers;
  std::string body;
  std::string Header(std::string_view name) const;  // case-insensitive; "" if absent
};

// Blocking request with one overall timeout. Transport failures become errors with
// code kUnavailable (refused/reset), kDeadlineExceeded (timeouts) or kDataLoss.
Result<HttpResponse> Fetch(const HttpRequest& request, std::chrono::milliseconds timeout);

// Convenience: GET/POST against host:port.
Result<HttpResponse> Get(const std::string& host, int port, const std::string& path,
                         std::chrono::milliseconds timeout);
Result<HttpResponse> PostJson(const std::string& host, int port, const std::string& path,
                              const std::string& json, std::chrono::milliseconds timeout);

// Blocking streaming request: on_body gets each decoded body piece as it arrives.
// Returns the status and headers (body left empty).
Result<HttpResponse> Stream(const HttpRequest& request, std::chrono::milliseconds timeout,
                            const std::function<void(std::string_view, int64_t)>& on_body);

}  // namespace hone::net
