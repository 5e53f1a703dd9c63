#include "chaos/fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/strings.h"

namespace hone::chaos {

namespace {

constexpr struct {
  ProxyFaultKind kind;
  const char* name;
} kNames[] = {{ProxyFaultKind::kNone, "none"},
              {ProxyFaultKind::kDropMidStream, "drop_mid_stream"},
              {ProxyFaultKind::kStall, "stall"},
              {ProxyFaultKind::kHttpError, "http_error"},
              {ProxyFaultKind::kMalformedSse, "malformed_sse"},
              {ProxyFaultKind::kTruncatedSse, "truncated_sse"},
              {ProxyFaultKind::kSlowLoris, "slow_loris"}};

int ConnectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, std::string_view data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads what the upstream sends next (up to 200 ms); "" at its end.
bool RecvSome(int fd, std::string& out, const std::atomic<bool>& stopping) {
  char buf[16384];
  while (!stopping.load()) {
    pollfd pfd{fd, POLLIN, 0};
    int r = poll(&pfd, 1, 200);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out.append(buf, static_cast<size_t>(n));
    return true;
  }
  return false;
}

// Incremental decoder of a chunked body.
class Dechunker {
 public:
  // Appends raw bytes; decoded data goes to `out`. True once the last chunk is in.
  bool Feed(std::string_view raw, std::string& out) {
    buf_.append(raw);
    while (!done_) {
      if (need_ < 0) {
        size_t eol = buf_.find("\r\n");
        if (eol == std::string::npos) return false;
        need_ = static_cast<int64_t>(std::strtoll(buf_.substr(0, eol).c_str(), nullptr, 16));
        buf_.erase(0, eol + 2);
        if (need_ == 0) done_ = true;
      } else {
        if (static_cast<int64_t>(buf_.size()) < need_ + 2) return false;
        out.append(buf_, 0, static_cast<size_t>(need_));
        buf_.erase(0, static_cast<size_t>(need_) + 2);
        need_ = -1;
      }
    }
    return true;
  }

 private:
  std::string buf_;
  int64_t need_ = -1;
  bool done_ = false;
};

// One chunk of a chunked body.
std::string Chunk(std::string_view data) {
  char head[32];
  std::snprintf(head, sizeof head, "%zx\r\n", data.size());
  return std::string(head) + std::string(data) + "\r\n";
}

}  // namespace

std::string_view ProxyFaultName(ProxyFaultKind k) {
  for (const auto& n : kNames) {
    if (n.kind == k) return n.name;
  }
  return "unknown";
}

Result<ProxyFaultKind> ParseProxyFault(std::string_view name) {
  for (const auto& n : kNames) {
    if (name == n.name) return n.kind;
  }
  return InvalidArgument("unknown proxy fault '" + std::string(name) +
                         "' (drop_mid_stream, stall, http_error, malformed_sse, truncated_sse, slow_loris)");
}

Result<std::unique_ptr<FaultProxy>> FaultProxy::Start(int upstream_port, ProxyFault fault, RequestHook on_request) {
  if (fault.every < 1) return InvalidArgument("proxy fault: every must be >= 1");
  auto proxy = std::unique_ptr<FaultProxy>(new FaultProxy(upstream_port, fault, std::move(on_request)));
  FaultProxy* p = proxy.get();
  HONE_ASSIGN_OR_RETURN(proxy->server_,
                        net::RawServer::Start([p](const net::RawRequest& req, net::RawWriter& w) { p->Handle(req, w); }));
  return proxy;
}

FaultProxy::~FaultProxy() {
  stopping_ = true;
  if (server_) server_->Stop();
}

bool FaultProxy::Selected(int index) const {
  if (fault_.kind == ProxyFaultKind::kNone || index < fault_.first) return false;
  int k = index - fault_.first;
  if (k % fault_.every != 0) return false;
  return fault_.count == 0 || k / fault_.every < fault_.count;
}

bool FaultProxy::Sleep(double seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  while (std::chrono::steady_clock::now() < until) {
    if (stopping_.load()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(
        20, std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count() + 1)));
  }
  return !stopping_.load();
}

void FaultProxy::Handle(const net::RawRequest& req, net::RawWriter& w) {
  const bool completion = req.method == "POST" && (Contains(req.path, "completions") || req.path == "/completion");
  const int index = completion ? completions_++ : -1;
  if (completion && on_request_) on_request_(index);
  const bool fault = completion && Selected(index);
  const ProxyFaultKind kind = fault ? fault_.kind : ProxyFaultKind::kNone;
  if (kind == ProxyFaultKind::kHttpError) {
    ++injected_;
    std::string body = "{\"error\":{\"code\":" + std::to_string(fault_.status) +
                       ",\"message\":\"injected by hone's fault proxy\",\"type\":\"chaos\"}}";
    w.Write("HTTP/1.1 " + std::to_string(fault_.status) + " Injected\r\nContent-Type: application/json\r\n"
            "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
    return;
  }
  int up = ConnectLoopback(upstream_port_);
  if (up < 0) {
    w.Reset();  // the upstream is gone: the client sees what a dead server gives it
    return;
  }
  // The client's request as it came (its header block ends without the blank line).
  if (!SendAll(up, req.headers + "\r\n\r\n" + req.body)) {
    close(up);
    return;
  }
  bool dripping = kind == ProxyFaultKind::kSlowLoris;
  if (dripping) ++injected_;
  auto write = [&](std::string_view bytes) {
    if (!dripping) return w.Write(bytes);
    for (size_t off = 0; off < bytes.size(); off += static_cast<size_t>(fault_.drip_bytes)) {
      if (!w.Write(bytes.substr(off, static_cast<size_t>(fault_.drip_bytes))) || !Sleep(fault_.drip_ms / 1000)) {
        return false;
      }
    }
    return true;
  };
  std::string in;
  size_t head_end = std::string::npos;
  while (head_end == std::string::npos) {
    if (!RecvSome(up, in, stopping_)) break;
    head_end = in.find("\r\n\r\n");
  }
  if (head_end == std::string::npos) {
    w.Write(in);
    close(up);
    return;
  }
  std::string head = in.substr(0, head_end + 4);
  std::string rest = in.substr(head_end + 4);
  const bool chunked = Contains(ToLower(head), "transfer-encoding: chunked");
  if (kind == ProxyFaultKind::kNone || !chunked) {
    // A clean relay (or a fault that needs SSE events on a body without them).
    bool ok = write(head) && write(rest);
    std::string more;
    while (ok && RecvSome(up, more, stopping_)) {
      ok = write(more);
      more.clear();
    }
    close(up);
    return;
  }
  if (!write(head)) {
    close(up);
    return;
  }
  Dechunker dechunk;
  std::string pending;  // decoded bytes not yet sent as whole events
  int events = 0;
  bool done = dechunk.Feed(rest, pending);
  while (true) {
    size_t end;
    while ((end = pending.find("\n\n")) != std::string::npos) {
      std::string event = pending.substr(0, end + 2);
      pending.erase(0, end + 2);
      if (events++ == fault_.after_events) {
        switch (kind) {
          case ProxyFaultKind::kDropMidStream:
            ++injected_;
            w.Reset();
            close(up);
            return;
          case ProxyFaultKind::kStall:
            ++injected_;
            Sleep(fault_.stall_s);
            w.Reset();
            close(up);
            return;
          case ProxyFaultKind::kMalformedSse:
            ++injected_;
            if (!write(Chunk("data: {\"choices\":[{\"delta\":{\"content\":\"x\"\n\n"))) {
              close(up);
              return;
            }
            break;
          case ProxyFaultKind::kTruncatedSse:
            ++injected_;
            write(Chunk(event.substr(0, std::min<size_t>(event.size() / 2, 12))));
            write("0\r\n\r\n");
            close(up);
            return;
          case ProxyFaultKind::kSlowLoris:
            dripping = false;  // the first events dripped; the rest flows
            break;
          case ProxyFaultKind::kNone:
          case ProxyFaultKind::kHttpError:
            break;
        }
      }
      if (!write(Chunk(event))) {
        close(up);
        return;
      }
    }
    if (done) break;
    std::string raw;
    if (!RecvSome(up, raw, stopping_)) break;
    done = dechunk.Feed(raw, pending);
  }
  if (!pending.empty()) write(Chunk(pending));
  write("0\r\n\r\n");
  close(up);
}

}  // namespace hone::chaos
