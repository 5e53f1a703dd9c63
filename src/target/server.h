// Server: one running serving process, started from a LaunchSpec and supervised.
//
// Start() launches the process in its own group (sys::ChildProcess, with the log file
// in the trial directory), then polls the health endpoint until it answers 200. If the
// process exits first, stays unhealthy past the timeout, or the user interrupts, the
// group is stopped and the error carries the classified failure: context keys
// "failure_kind", "hint", "log_excerpt" and "exit". A Server owns its process: the
// destructor stops the group. Not thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "sys/process.h"
#include "target/adapter.h"

namespace hone::target {

struct ServerOptions {
  std::string log_path;
  std::chrono::milliseconds health_timeout{180'000};
  std::chrono::milliseconds stop_grace{5'000};
  // Test hook (chaos runs): called with the chosen port just before each launch.
  std::function<void(int port)> before_launch;
};

class Server {
 public:
  static Result<std::unique_ptr<Server>> Start(const LaunchSpec& spec, const std::vector<FailureRule>& rules,
                                               const ServerOptions& options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  const LaunchSpec& spec() const { return spec_; }
  const std::string& host() const { return spec_.host; }
  int port() const { return spec_.port; }
  std::string base_url() const { return "http://" + spec_.host + ":" + std::to_string(spec_.port); }
  double startup_seconds() const { return startup_seconds_; }
  // Launches StartServer made before this one and why they failed ("port 41234:
  // port_in_use ..."), oldest first.
  const std::vector<std::string>& relaunches() const { return relaunches_; }
  pid_t pid() const { return process_->pid(); }
  bool Alive() { return !process_->Poll().has_value(); }
  std::string LogTail(size_t bytes) const { return process_->OutputTail(bytes); }
  sys::ExitStatus Stop();

 private:
  Server(LaunchSpec spec, std::unique_ptr<sys::ChildProcess> p, std::chrono::milliseconds grace)
      : spec_(std::move(spec)), process_(std::move(p)), grace_(grace) {}
  LaunchSpec spec_;
  std::unique_ptr<sys::ChildProcess> process_;
  std::chrono::milliseconds grace_;
  double startup_seconds_ = 0;
  std::vector<std::string> relaunches_;
  friend Result<std::unique_ptr<Server>> StartServer(const Adapter&, const Config&, LaunchContext, const ServerOptions&);
};

// Builds an error for a failed launch (shared with callers that classify logs
// themselves).
Error LaunchFailure(const Classification& c, const std::string& what, const std::string& exit_text);

// Picks a free loopback port (unless ctx.port is set), builds the launch with
// `adapter`, and starts it; a port race (port_in_use) is retried on a new port.
// An explicitly requested port that is taken fails at once with port_in_use.
Result<std::unique_ptr<Server>> StartServer(const Adapter& adapter, const Config& config, LaunchContext ctx,
                                            const ServerOptions& options);

}  // namespace hone::target
