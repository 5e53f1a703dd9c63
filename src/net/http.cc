#include "net/http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "core/strings.h"

namespace hone::net {
namespace {

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

Result<sockaddr_in> Resolve(const std::string& host, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string h = host == "localhost" ? "127.0.0.1" : host;
  if (inet_pton(AF_INET, h.c_str(), &addr.sin_addr) == 1) return addr;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res) {
    return InvalidArgument("cannot resolve host: " + host);
  }
  addr.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
  return addr;
}

}  // namespace

std::string_view TransportErrorName(TransportError e) {
  switch (e) {
    case TransportError::kNone: return "none";
    case TransportError::kConnectRefused: return "connection_refused";
    case TransportError::kConnectionReset: return "connection_reset";
    case TransportError::kStalled: return "stalled";
    case TransportError::kTotalTimeout: return "timeout";
    case TransportError::kTruncated: return "truncated";
    case TransportError::kBadResponse: return "bad_response";
    case TransportError::kCancelled: return "cancelled";
    case TransportError::kInternal: return "internal";
  }
  return "unknown";
}

Result<Url> ParseUrl(std::string_view text) {
  std::string_view t = Trim(text);
  constexpr std::string_view kScheme = "http://";
  if (!t.starts_with(kScheme)) {
    return InvalidArgument("unsupported URL (only http:// is supported): '" + std::string(text) + "'");
  }
  t.remove_prefix(kScheme.size());
  Url url;
  size_t slash = t.find('/');
  std::string_view authority = t.substr(0, slash);
  url.path = slash == std::string_view::npos ? "/" : std::string(t.substr(slash));
  while (url.path.size() > 1 && url.path.back() == '/') url.path.pop_back();
  size_t colon = authority.rfind(':');
  if (colon == std::string_view::npos) {
    url.host = std::string(authority);
  } else {
    url.host = std::string(authority.substr(0, colon));
    auto port = ParseInt(authority.substr(colon + 1));
    if (!port || *port <= 0 || *port > 65535) {
      return InvalidArgument("bad port in URL: '" + std::string(text) + "'");
    }
    url.port = static_cast<int>(*port);
  }
  if (url.host.empty()) return InvalidArgument("no host in URL: '" + std::string(text) + "'");
  return url;
}

enum class Phase { kConnecting, kSending, kHeaders, kBodyLength, kChunkSize, kChunkData, kChunkDataEnd, kTrailers, kUntilClose };

struct HttpLoop::Conn {
  uint64_t id = 0;
  int fd = -1;
  ResponseHandler* handler = nullptr;
  Phase phase = Phase::kConnecting;
  std::string out;
  size_t out_off = 0;
  std::string in;
  size_t in_off = 0;
  uint64_t remaining = 0;  // body or chunk bytes left
  int status = 0;
  int64_t start_ns = 0;
  int64_t last_io_ns = 0;
  int64_t idle_ns = 0;
  int64_t total_ns = 0;
};

int64_t HttpLoop::NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

Result<std::unique_ptr<HttpLoop>> HttpLoop::Create() {
  int epfd = epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0) return Internal(std::string("epoll_create1: ") + strerror(errno));
  return std::unique_ptr<HttpLoop>(new HttpLoop(epfd));
}

HttpLoop::HttpLoop(int epfd) : epfd_(epfd) {}

HttpLoop::~HttpLoop() {
  CancelAll();
  close(epfd_);
}

uint64_t HttpLoop::Submit(const HttpRequest& request, ResponseHandler* handler, RequestLimits limits,
                          int64_t* send_ns) {
  auto c = std::make_unique<Conn>();
  c->id = next_id_++;
  c->handler = handler;
  c->idle_ns = limits.idle_timeout.count() * 1'000'000;
  c->total_ns = limits.total_timeout.count() * 1'000'000;
  c->out = request.method + " " + request.path + " HTTP/1.1\r\nHost: " + request.host + ":" +
           std::to_string(request.port) + "\r\nConnection: close\r\n";
  bool has_type = false;
  for (const auto& [k, v] : request.headers) {
    has_type = has_type || IEquals(k, "content-type");
    c->out += k + ": " + v + "\r\n";
  }
  if (!request.body.empty() || request.method == "POST") {
    if (!has_type) c->out += "Content-Type: application/json\r\n";
    c->out += "Content-Length: " + std::to_string(request.body.size()) + "\r\n";
  }
  c->out += "\r\n";
  c->out += request.body;
  c->start_ns = c->last_io_ns = NowNs();
  if (send_ns) *send_ns = c->start_ns;
  uint64_t id = c->id;
  Conn* raw = c.get();
  conns_.emplace(id, std::move(c));

  auto addr = Resolve(request.host, request.port);
  if (!addr) {
    Finish(id, TransportError::kConnectRefused, addr.error().message);
    return id;
  }
  raw->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (raw->fd < 0) {
    Finish(id, TransportError::kInternal, std::string("socket: ") + strerror(errno));
    return id;
  }
  int one = 1;
  setsockopt(raw->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int r = connect(raw->fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr);
  if (r != 0 && errno != EINPROGRESS) {
    Finish(id, errno == ECONNREFUSED ? TransportError::kConnectRefused : TransportError::kInternal,
           std::string("connect: ") + strerror(errno));
    return id;
  }
  epoll_event ev{};
  ev.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP;
  ev.data.u64 = id;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, raw->fd, &ev);
  return id;
}

void HttpLoop::Cancel(uint64_t id) {
  if (conns_.contains(id)) Finish(id, TransportError::kCancelled, "cancelled");
}

void HttpLoop::CancelAll() {
  std::vector<uint64_t> ids;
  for (auto& [id, c] : conns_) ids.push_back(id);
  for (uint64_t id : ids) Finish(id, TransportError::kCancelled, "cancelled");
}

void HttpLoop::Finish(uint64_t id, TransportError error, std::string detail) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  std::unique_ptr<Conn> c = std::move(it->second);
  conns_.erase(it);
  if (c->fd >= 0) {
    epoll_ctl(epfd_, EPOLL_CTL_DEL, c->fd, nullptr);
    close(c->fd);
  }
  c->handler->OnDone(error, detail, NowNs());
}

bool HttpLoop::Flush(Conn& c) {
  while (c.out_off < c.out.size()) {
    ssize_t n = send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) return true;
      Finish(c.id, errno == ECONNREFUSED ? TransportError::kConnectRefused : TransportError::kConnectionReset,
             std::string("send: ") + strerror(errno));
      return false;
    }
    c.out_off += static_cast<size_t>(n);
  }
  if (c.phase == Phase::kSending || c.phase == Phase::kConnecting) {
    c.phase = Phase::kHeaders;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = c.id;
    epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
  }
  return true;
}

// Parses as much of the buffered input as possible, delivering body bytes.
bool HttpLoop::Consume(Conn& c, int64_t now) {
  while (true) {
    std::string_view buf(c.in.data() + c.in_off, c.in.size() - c.in_off);
    switch (c.phase) {
      case Phase::kConnecting:
      case Phase::kSending:
        return true;
      case Phase::kHeaders: {
        size_t end = buf.find("\r\n\r\n");
        if (end == std::string_view::npos) {
          if (buf.size() > 64 * 1024) {
            Finish(c.id, TransportError::kBadResponse, "response headers larger than 64 KiB");
            return false;
          }
          return true;
        }
        std::string_view head = buf.substr(0, end);
        c.in_off += end + 4;
        size_t line_end = head.find("\r\n");
        std::string_view status_line = head.substr(0, line_end);
        if (!status_line.starts_with("HTTP/1.") || status_line.size() < 12) {
          Finish(c.id, TransportError::kBadResponse, "bad status line: " + std::string(status_line.substr(0, 80)));
          return false;
        }
        auto code = ParseInt(status_line.substr(9, 3));
        if (!code) {
          Finish(c.id, TransportError::kBadResponse, "bad status code: " + std::string(status_line.substr(0, 80)));
          return false;
        }
        c.status = static_cast<int>(*code);
        Headers headers;
        bool chunked = false;
        int64_t content_length = -1;
        std::string_view rest = line_end == std::string_view::npos ? std::string_view() : head.substr(line_end + 2);
        for (const std::string& line : Split(rest, '\n')) {
          std::string_view l = Trim(line);
          if (l.empty()) continue;
          size_t colon = l.find(':');
          if (colon == std::string_view::npos) continue;
          std::string key(Trim(l.substr(0, colon)));
          std::string value(Trim(l.substr(colon + 1)));
          if (IEquals(key, "transfer-encoding") && Contains(ToLower(value), "chunked")) chunked = true;
          if (IEquals(key, "content-length")) {
            auto v = ParseInt(value);
            if (!v || *v < 0) {
              Finish(c.id, TransportError::kBadResponse, "bad Content-Length: " + value);
              return false;
            }
            content_length = *v;
          }
          headers.emplace_back(std::move(key), std::move(value));
        }
        c.handler->OnHeaders(c.status, headers, now);
        if (c.status == 204 || c.status == 304 || (c.status >= 100 && c.status < 200)) {
          Finish(c.id, TransportError::kNone, "");
          return false;
        }
        if (chunked) {
          c.phase = Phase::kChunkSize;
        } else if (content_length >= 0) {
          c.phase = Phase::kBodyLength;
          c.remaining = static_cast<uint64_t>(content_length);
          if (c.remaining == 0) {
            Finish(c.id, TransportError::kNone, "");
            return false;
          }
        } else {
          c.phase = Phase::kUntilClose;
        }
        break;
      }
      case Phase::kBodyLength: {
        if (buf.empty()) return true;
        size_t n = static_cast<size_t>(std::min<uint64_t>(c.remaining, buf.size()));
        c.handler->OnBody(buf.substr(0, n), now);
        c.in_off += n;
        c.remaining -= n;
        if (c.remaining == 0) {
          Finish(c.id, TransportError::kNone, "");
          return false;
        }
        return true;
      }
      case Phase::kUntilClose: {
        if (!buf.empty()) c.handler->OnBody(buf, now);
        c.in_off += buf.size();
        return true;
      }
      case Phase::kChunkSize: {
        size_t eol = buf.find("\r\n");
        if (eol == std::string_view::npos) {
          if (buf.size() > 1024) {
            Finish(c.id, TransportError::kBadResponse, "chunk size line too long");
            return false;
          }
          return true;
        }
        std::string_view size_text = buf.substr(0, eol);
        size_text = size_text.substr(0, size_text.find(';'));
        size_text = Trim(size_text);
        uint64_t size = 0;
        if (size_text.empty()) {
          Finish(c.id, TransportError::kBadResponse, "empty chunk size");
          return false;
        }
        for (char ch : size_text) {
          int d = std::isdigit(static_cast<unsigned char>(ch)) ? ch - '0'
                  : (ch >= 'a' && ch <= 'f')                  ? ch - 'a' + 10
                  : (ch >= 'A' && ch <= 'F')                  ? ch - 'A' + 10
                                                              : -1;
          if (d < 0 || size > (1ULL << 40)) {
            Finish(c.id, TransportError::kBadResponse, "bad chunk size: " + std::string(size_text.substr(0, 20)));
            return false;
          }
          size = size * 16 + static_cast<uint64_t>(d);
        }
        c.in_off += eol + 2;
        if (size == 0) {
          c.phase = Phase::kTrailers;
        } else {
          c.remaining = size;
          c.phase = Phase::kChunkData;
        }
        break;
      }
      case Phase::kChunkData: {
        if (buf.empty()) return true;
        size_t n = static_cast<size_t>(std::min<uint64_t>(c.remaining, buf.size()));
        c.handler->OnBody(buf.substr(0, n), now);
        c.in_off += n;
        c.remaining -= n;
        if (c.remaining > 0) return true;
        c.phase = Phase::kChunkDataEnd;
        break;
      }
      case Phase::kChunkDataEnd: {
        if (buf.size() < 2) return true;
        if (buf.substr(0, 2) != "\r\n") {
          Finish(c.id, TransportError::kBadResponse, "missing CRLF after chunk");
          return false;
        }
        c.in_off += 2;
        c.phase = Phase::kChunkSize;
        break;
      }
      case Phase::kTrailers: {
        size_t eol = buf.find("\r\n");
        if (eol == std::string_view::npos) return true;
        c.in_off += eol + 2;
        if (eol == 0) {
          Finish(c.id, TransportError::kNone, "");
          return false;
        }
        break;
      }
    }
  }
}

bool HttpLoop::ReadSome(Conn& c) {
  // Compact the buffer when the consumed prefix dominates.
  if (c.in_off > 0 && c.in_off * 2 >= c.in.size()) {
    c.in.erase(0, c.in_off);
    c.in_off = 0;
  }
  while (true) {
    size_t old = c.in.size();
    c.in.resize(old + 16384);
    ssize_t n = recv(c.fd, c.in.data() + old, 16384, 0);
    int64_t now = NowNs();
    if (n > 0) {
      c.in.resize(old + static_cast<size_t>(n));
      c.last_io_ns = now;
      if (!Consume(c, now)) return false;
      if (static_cast<size_t>(n) < 16384) return true;  // drained for now
      continue;
    }
    c.in.resize(old);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Finish(c.id, errno == ECONNREFUSED ? TransportError::kConnectRefused : TransportError::kConnectionReset,
             std::string("recv: ") + strerror(errno));
      return false;
    }
    // EOF.
    if (c.phase == Phase::kUntilClose) {
      Finish(c.id, TransportError::kNone, "");
    } else if (c.phase == Phase::kHeaders && c.in.size() == c.in_off) {
      Finish(c.id, TransportError::kConnectionReset, "connection closed before a response");
    } else {
      Finish(c.id, TransportError::kTruncated, "connection closed mid-response");
    }
    return false;
  }
}

void HttpLoop::HandleEvent(Conn& c, uint32_t events) {
  if (c.phase == Phase::kConnecting) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      Finish(c.id, err == ECONNREFUSED ? TransportError::kConnectRefused : TransportError::kConnectionReset,
             std::string("connect: ") + strerror(err));
      return;
    }
    c.phase = Phase::kSending;
  }
  if (c.phase == Phase::kSending && (events & EPOLLOUT)) {
    if (!Flush(c)) return;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    ReadSome(c);
  }
}

void HttpLoop::RunOnce(int max_wait_ms) {
  epoll_event events[256];
  int n = epoll_wait(epfd_, events, 256, max_wait_ms);
  for (int i = 0; i < n; ++i) {
    auto it = conns_.find(events[i].data.u64);
    if (it == conns_.end()) continue;  // finished earlier in this round
    HandleEvent(*it->second, events[i].events);
  }
  int64_t now = NowNs();
  std::vector<std::pair<uint64_t, TransportError>> expired;
  for (auto& [id, c] : conns_) {
    if (now - c->start_ns > c->total_ns) {
      expired.emplace_back(id, TransportError::kTotalTimeout);
    } else if (now - c->last_io_ns > c->idle_ns) {
      expired.emplace_back(id, TransportError::kStalled);
    }
  }
  for (auto& [id, err] : expired) {
    Finish(id, err, err == TransportError::kStalled ? "no data within the idle timeout" : "request exceeded its time limit");
  }
}

void HttpLoop::RunUntilIdle(int64_t deadline_ns) {
  while (!conns_.empty() && NowNs() < deadline_ns) RunOnce(10);
}

std::string HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (IEquals(k, name)) return v;
  }
  return "";
}

namespace {

class CollectHandler : public ResponseHandler {
 public:
  explicit CollectHandler(const std::function<void(std::string_view, int64_t)>* on_body) : on_body_(on_body) {}
  void OnHeaders(int status, const Headers& headers, int64_t) override {
    response.status = status;
    response.headers = headers;
  }
  void OnBody(std::string_view data, int64_t t) override {
    if (on_body_) {
      (*on_body_)(data, t);
    } else {
      response.body.append(data);
    }
  }
  void OnDone(TransportError e, std::string_view d, int64_t) override {
    error = e;
    detail = d;
    done = true;
  }
  HttpResponse response;
  TransportError error = TransportError::kNone;
  std::string detail;
  bool done = false;

 private:
  const std::function<void(std::string_view, int64_t)>* on_body_;
};

Result<HttpResponse> RunBlocking(const HttpRequest& request, std::chrono::milliseconds timeout,
                                 const std::function<void(std::string_view, int64_t)>* on_body) {
  HONE_ASSIGN_OR_RETURN(auto loop, HttpLoop::Create());
  CollectHandler handler(on_body);
  loop->Submit(request, &handler, RequestLimits{timeout, timeout});
  while (!handler.done) loop->RunOnce(50);
  if (handler.error == TransportError::kNone) return std::move(handler.response);
  std::string where = request.method + " http://" + request.host + ":" + std::to_string(request.port) + request.path;
  ErrorCode code = ErrorCode::kDataLoss;
  switch (handler.error) {
    case TransportError::kConnectRefused:
    case TransportError::kConnectionReset: code = ErrorCode::kUnavailable; break;
    case TransportError::kStalled:
    case TransportError::kTotalTimeout: code = ErrorCode::kDeadlineExceeded; break;
    case TransportError::kCancelled: code = ErrorCode::kCancelled; break;
    default: break;
  }
  return Fail(Error{code, where + ": " + std::string(TransportErrorName(handler.error)) + " (" + handler.detail + ")",
                    {{"transport_error", std::string(TransportErrorName(handler.error))}}});
}

}  // namespace

Result<HttpResponse> Fetch(const HttpRequest& request, std::chrono::milliseconds timeout) {
  return RunBlocking(request, timeout, nullptr);
}

Result<HttpResponse> Stream(const HttpRequest& request, std::chrono::milliseconds timeout,
                            const std::function<void(std::string_view, int64_t)>& on_body) {
  return RunBlocking(request, timeout, &on_body);
}

Result<HttpResponse> Get(const std::string& host, int port, const std::string& path,
                         std::chrono::milliseconds timeout) {
  return Fetch(HttpRequest{.method = "GET", .host = host, .port = port, .path = path}, timeout);
}

Result<HttpResponse> PostJson(const std::string& host, int port, const std::string& path, const std::string& json,
                              std::chrono::milliseconds timeout) {
  return Fetch(HttpRequest{.method = "POST", .host = host, .port = port, .path = path,
                           .headers = {{"Content-Type", "application/json"}}, .body = json},
               timeout);
}

}  // namespace hone::net
