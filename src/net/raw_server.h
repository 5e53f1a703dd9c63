// RawServer: a minimal loopback HTTP/1.1 server whose handlers write raw bytes.
//
// It exists for two jobs: hone's own self-checks (the SSE emitter that measures the
// benchmark client) and tests that need a real socket peer misbehaving on purpose
// (malformed SSE, truncation, resets, stalls, 429/503). Each connection is served by
// its own thread; the handler gets the parsed request and a Writer that sends bytes
// immediately. It binds 127.0.0.1 only. Stop() (or the destructor) closes the
// listener and joins every connection thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/error.h"

namespace hone::net {

struct RawRequest {
  std::string method;
  std::string path;
  std::string headers;  // raw header block
  std::string body;
};

class RawWriter {
 public:
  explicit RawWriter(int fd) : fd_(fd) {}
  // Sends all bytes; false once the peer is gone.
  bool Write(std::string_view bytes);
  // Writes one chunk of a chunked body ("<hex>\r\n<data>\r\n").
  bool WriteChunk(std::string_view data);
  // Ends a chunked body.
  bool EndChunks();
  // Resets the connection (RST) instead of closing it cleanly.
  void Reset();
  int fd() const { return fd_; }

 private:
  int fd_;
};

class RawServer {
 public:
  using Handler = std::function<void(const RawRequest&, RawWriter&)>;
  // Listens on 127.0.0.1:port (0 = any free port).
  static Result<std::unique_ptr<RawServer>> Start(Handler handler, int port = 0);
  ~RawServer();
  RawServer(const RawServer&) = delete;
  RawServer& operator=(const RawServer&) = delete;
  int port() const { return port_; }
  void Stop();

 private:
  RawServer(Handler h, int fd, int port) : handler_(std::move(h)), listen_fd_(fd), port_(port) {}
  void AcceptLoop();
  void Serve(int fd);

  Handler handler_;
  int listen_fd_;
  int port_;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> workers_;  // GUARDED_BY(mu_)
  std::vector<int> open_fds_;         // GUARDED_BY(mu_)
};

// Finds a free TCP port on 127.0.0.1 (bind to 0, read it back, close).
Result<int> FreeLoopbackPort();
// True when something accepts connections on 127.0.0.1:port.
bool PortInUse(int port);

}  // namespace hone::net
