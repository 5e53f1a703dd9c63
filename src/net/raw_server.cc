#include "net/raw_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/strings.h"

namespace hone::net {

bool RawWriter::Write(std::string_view bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

bool RawWriter::WriteChunk(std::string_view data) {
  char head[32];
  int len = std::snprintf(head, sizeof head, "%zx\r\n", data.size());
  std::string buf(head, static_cast<size_t>(len));
  buf.append(data);
  buf += "\r\n";
  return Write(buf);
}

bool RawWriter::EndChunks() { return Write("0\r\n\r\n"); }

void RawWriter::Reset() {
  linger lg{1, 0};  // closing with zero linger sends RST (and no FIN before it)
  setsockopt(fd_, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  // Close the socket now, in place: /dev/null takes over the descriptor number, so the
  // server's own shutdown/close later touch nothing (they fail on a non-socket).
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull >= 0) {
    dup2(devnull, fd_);
    close(devnull);
  } else {
    shutdown(fd_, SHUT_RDWR);
  }
}

Result<std::unique_ptr<RawServer>> RawServer::Start(Handler handler, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Internal(std::string("socket: ") + strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 1024) != 0) {
    Error e{ErrorCode::kUnavailable, "cannot listen on 127.0.0.1:" + std::to_string(port) + ": " + strerror(errno), {}};
    close(fd);
    return Fail(std::move(e));
  }
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  auto server = std::unique_ptr<RawServer>(new RawServer(std::move(handler), fd, ntohs(addr.sin_port)));
  server->acceptor_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

void RawServer::AcceptLoop() {
  while (!stopping_.load()) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (poll(&pfd, 1, 50) <= 0) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.push_back(fd);
    workers_.emplace_back([this, fd] { Serve(fd); });
  }
}

void RawServer::Serve(int fd) {
  std::string in;
  char buf[16384];
  RawRequest req;
  size_t head_end = std::string::npos;
  while (head_end == std::string::npos) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
    head_end = in.find("\r\n\r\n");
  }
  if (head_end != std::string::npos) {
    std::string_view head(in.data(), head_end);
    std::string_view line = head.substr(0, head.find("\r\n"));
    auto parts = Split(line, ' ');
    if (parts.size() >= 2) {
      req.method = parts[0];
      req.path = parts[1];
    }
    req.headers = std::string(head);
    size_t content_length = 0;
    for (const auto& h : Split(req.headers, '\n')) {
      std::string lower = ToLower(h);
      if (lower.starts_with("content-length:")) {
        if (auto v = ParseInt(h.substr(15))) content_length = static_cast<size_t>(*v);
      }
    }
    req.body = in.substr(head_end + 4);
    while (req.body.size() < content_length) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      req.body.append(buf, static_cast<size_t>(n));
    }
    RawWriter writer(fd);
    handler_(req, writer);
  }
  shutdown(fd, SHUT_WR);
  // Drain briefly so the client sees a clean FIN rather than a reset.
  pollfd pfd{fd, POLLIN, 0};
  while (poll(&pfd, 1, 20) > 0 && recv(fd, buf, sizeof buf, 0) > 0) {
  }
  std::lock_guard<std::mutex> lock(mu_);
  open_fds_.erase(std::remove(open_fds_.begin(), open_fds_.end(), fd), open_fds_.end());
  close(fd);
}

void RawServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (acceptor_.joinable()) acceptor_.join();
  close(listen_fd_);
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) shutdown(fd, SHUT_RDWR);  // unblock handlers stuck in send/recv
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
}

RawServer::~RawServer() { Stop(); }

Result<int> FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Internal(std::string("socket: ") + strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return Unavailable(std::string("bind: ") + strerror(errno));
  }
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

bool PortInUse(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool in_use = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return in_use;
}

}  // namespace hone::net
