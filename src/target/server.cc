#include "target/server.h"

#include <thread>

#include "core/strings.h"
#include "net/http.h"
#include "net/raw_server.h"
#include "sys/clock.h"
#include "sys/signals.h"

namespace hone::target {

using namespace std::chrono_literals;

Error LaunchFailure(const Classification& c, const std::string& what, const std::string& exit_text) {
  std::string msg = what + ": " + std::string(FailureKindName(c.kind));
  if (!c.hint.empty()) msg += " (" + c.hint + ")";
  if (!c.excerpt.empty()) msg += ": " + std::string(Trim(LastLines(c.excerpt, 1)));
  ErrorCode code = c.kind == FailureKind::kHealthTimeout ? ErrorCode::kDeadlineExceeded
                   : c.kind == FailureKind::kNotFound    ? ErrorCode::kNotFound
                                                         : ErrorCode::kUnavailable;
  Error e{code, msg, {}};
  e.With("failure_kind", std::string(FailureKindName(c.kind)));
  e.With("hint", c.hint);
  e.With("log_excerpt", c.excerpt);
  e.With("exit", exit_text);
  return e;
}

Result<std::unique_ptr<Server>> Server::Start(const LaunchSpec& spec, const std::vector<FailureRule>& rules,
                                              const ServerOptions& options) {
  sys::Clock& clock = sys::DefaultClock();
  int64_t start_ns = clock.MonoNanos();
  auto child = sys::ChildProcess::Start({.argv = spec.argv, .env = spec.env, .log_path = options.log_path});
  if (!child) {
    if (child.error().code == ErrorCode::kNotFound) {
      return Fail(LaunchFailure({FailureKind::kNotFound, "the server binary is not installed", child.error().message},
                                "server did not start", "not started"));
    }
    return Fail(child.error());
  }
  auto server = std::unique_ptr<Server>(new Server(spec, std::move(*child), options.stop_grace));
  int64_t deadline = start_ns + options.health_timeout.count() * 1'000'000;
  bool foreign_listener = false;
  while (true) {
    if (auto exited = server->process_->Poll()) {
      std::string log = server->process_->Output();
      Classification c = Classify(rules, log, exited->code, exited->signal);
      if ((c.kind == FailureKind::kNone || c.kind == FailureKind::kExited) && net::PortInUse(spec.port)) {
        // Exited without a word we know, and someone else listens on its port: a port
        // race (llama-server's log can be lost when it exits at once).
        c = {FailureKind::kPortInUse, "another process listens on the port",
             "port " + std::to_string(spec.port) + " is taken" + (log.empty() ? "" : ": " + LastLines(log, 1))};
      }
      if (c.kind == FailureKind::kNone) c.kind = FailureKind::kExited;
      return Fail(LaunchFailure(c, "server exited during start-up", exited->ToString()));
    }
    auto health = net::Get(spec.host, spec.port, spec.health_path, 2s);
    if (health && health->status == 200) {
      // A healthy answer counts only from our own process: another process may have
      // taken the port between the check and our bind (ours then fails to bind and
      // exits, and is classified port_in_use above).
      auto ours = sys::GroupListensOn(server->pid(), spec.port);
      if (!ours || *ours) break;
      foreign_listener = true;
    }
    if (sys::InterruptRequested()) {
      server->Stop();
      return Cancelled("interrupted while waiting for the server to become healthy");
    }
    if (clock.MonoNanos() >= deadline) {
      server->Stop();
      std::string log = server->process_->Output();
      Classification c = Classify(rules, log, 0, 0);
      // A recognizable error in the log beats a bare timeout.
      if (foreign_listener && (c.kind == FailureKind::kNone || c.kind == FailureKind::kExited)) {
        c = {FailureKind::kPortInUse, "another process answers on the port", "port " + std::to_string(spec.port)};
      } else if (c.kind == FailureKind::kNone || c.kind == FailureKind::kExited) {
        c = {FailureKind::kHealthTimeout,
             "no healthy answer on " + spec.health_path + " within " +
                 HumanSeconds(static_cast<double>(options.health_timeout.count()) / 1000.0),
             LastLines(log, 3)};
      }
      return Fail(LaunchFailure(c, "server never became healthy", "stopped by hone"));
    }
    clock.SleepFor(100ms);
  }
  server->startup_seconds_ = static_cast<double>(clock.MonoNanos() - start_ns) * 1e-9;
  return server;
}

sys::ExitStatus Server::Stop() { return process_->Stop(grace_); }

Server::~Server() { Stop(); }

Result<std::unique_ptr<Server>> StartServer(const Adapter& adapter, const Config& config, LaunchContext ctx,
                                            const ServerOptions& options) {
  const bool fixed_port = ctx.port != 0;
  if (fixed_port && net::PortInUse(ctx.port)) {
    return Fail(LaunchFailure({FailureKind::kPortInUse, "another process listens on the port",
                               "port " + std::to_string(ctx.port) + " is already in use"},
                              "cannot start the server on port " + std::to_string(ctx.port), "not started"));
  }
  std::vector<std::string> relaunches;
  // Two bounds, kept apart: up to two relaunches for a lost port race, one for an exit
  // whose log lost its cause.
  int port_relaunches = 0;
  bool relaunched_exit = false;
  for (;;) {
    if (!fixed_port) {
      HONE_ASSIGN_OR_RETURN(ctx.port, net::FreeLoopbackPort());
    }
    HONE_ASSIGN_OR_RETURN(LaunchSpec spec, adapter.BuildLaunch(config, ctx));
    if (options.before_launch) options.before_launch(ctx.port);
    auto server = Server::Start(spec, adapter.failure_rules(), options);
    if (server) (*server)->relaunches_ = relaunches;
    if (server) return server;
    const std::string kind(server.error().Get("failure_kind"));
    // llama-server logs through a worker thread that its exit does not wait for: one that
    // exits at once on a loaded machine can lose the line naming the cause (a corrupt
    // model read as a bare exit). An exit without a recognizable cause is launched once
    // more for its log.
    if (kind == "exited" && !relaunched_exit) {
      relaunched_exit = true;
      relaunches.push_back("exited without a recognizable cause: " + server.error().message);
      continue;
    }
    if (fixed_port || port_relaunches >= 2 || kind != "port_in_use") return server;
    ++port_relaunches;
    relaunches.push_back("port " + std::to_string(ctx.port) + ": " + server.error().message);
  }
}

}  // namespace hone::target
