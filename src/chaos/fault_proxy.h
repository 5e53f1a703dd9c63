// FaultProxy: a loopback HTTP proxy that sits between the load generator and a real
// server and misbehaves on purpose (a test utility: `hone chaos proxy`, and the
// chaos plan of a session under test; it binds and connects to 127.0.0.1 only).
//
// Every request is forwarded to the upstream server. The completion requests chosen
// by the fault's schedule (the first-th, then every every-th, count of them) get the
// fault instead of a clean relay:
//   drop_mid_stream  the connection is reset after `after_events` SSE events
//   stall            nothing more is sent after `after_events` events for stall_s
//                    (longer than the client's idle timeout), then a reset
//   http_error       an immediate HTTP `status` (429, 500, 503, ...) without upstream
//   malformed_sse    a broken event ("data: {not json") after `after_events` events
//   truncated_sse    the body ends cleanly in the middle of an event
//   slow_loris       the response is dripped a few bytes at a time (`drip_ms` apart)
// Chunked SSE responses are decoded and re-chunked so that faults land on event
// boundaries; other responses pass through untouched.
//
// Ownership: the proxy owns its listener and per-connection threads; the destructor
// stops them (a stalled connection is released within ~20 ms). Counters are
// thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "core/error.h"
#include "net/raw_server.h"

namespace hone::chaos {

enum class ProxyFaultKind { kNone, kDropMidStream, kStall, kHttpError, kMalformedSse, kTruncatedSse, kSlowLoris };
std::string_view ProxyFaultName(ProxyFaultKind k);
Result<ProxyFaultKind> ParseProxyFault(std::string_view name);

struct ProxyFault {
  ProxyFaultKind kind = ProxyFaultKind::kNone;
  int first = 0;          // index of the first completion request to fault (0-based)
  int count = 1;          // how many get it (0 = every one from `first` on)
  int every = 1;          // spacing between faulted requests
  int after_events = 3;   // drop, stall, malformed, truncated: after this many events
  int status = 503;       // http_error
  double stall_s = 10;    // stall
  int drip_bytes = 2;     // slow_loris: bytes per write
  double drip_ms = 40;    // slow_loris: pause between writes
};

class FaultProxy {
 public:
  // `on_request` (optional) sees each completion request's index before it is
  // forwarded, on the connection's thread (the chaos plan's server faults use it).
  using RequestHook = std::function<void(int index)>;
  static Result<std::unique_ptr<FaultProxy>> Start(int upstream_port, ProxyFault fault, RequestHook on_request = {});
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const { return server_->port(); }
  int injected() const { return injected_.load(); }     // requests that got the fault
  int completions() const { return completions_.load(); }  // completion requests seen
  const ProxyFault& fault() const { return fault_; }

 private:
  FaultProxy(int upstream_port, ProxyFault fault, RequestHook hook)
      : upstream_port_(upstream_port), fault_(fault), on_request_(std::move(hook)) {}
  void Handle(const net::RawRequest& req, net::RawWriter& w);
  bool Selected(int index) const;
  bool Sleep(double seconds);  // false when the proxy is stopping

  int upstream_port_;
  ProxyFault fault_;
  RequestHook on_request_;
  std::unique_ptr<net::RawServer> server_;
  std::atomic<int> injected_{0};
  std::atomic<int> completions_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace hone::chaos
