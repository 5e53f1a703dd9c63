// `hone chaos proxy`: the fault-injecting proxy on its own (a test utility, loopback
// only), between any client (`hone bench run --url http://127.0.0.1:PORT`) and a
// server. The chaos suite (scripts/chaos.sh, docs/reliability.md) drives the same
// proxy from inside sessions.
#include <chrono>
#include <cstdio>
#include <thread>

#include "chaos/fault_proxy.h"
#include "cli/commands.h"
#include "sys/signals.h"

namespace hone::cli {

Action RegisterChaos(CLI::App& app, const Context&) {
  auto* cmd = app.add_subcommand("chaos", "Test utilities that inject faults (loopback only)");
  cmd->require_subcommand(1);
  auto* proxy = cmd->add_subcommand("proxy", "A proxy that injects faults between a client and a server");
  auto upstream = std::make_shared<int>(0);
  auto fault = std::make_shared<std::string>("none");
  auto f = std::make_shared<chaos::ProxyFault>();
  proxy->add_option("--upstream", *upstream, "The server's port on 127.0.0.1")->required();
  proxy->add_option("--fault", *fault,
                    "none, drop_mid_stream, stall, http_error, malformed_sse, truncated_sse or slow_loris");
  proxy->add_option("--first", f->first, "First completion request (0-based) to fault");
  proxy->add_option("--count", f->count, "How many requests get the fault (0 = all from --first on)");
  proxy->add_option("--every", f->every, "Fault every n-th request");
  proxy->add_option("--after-events", f->after_events, "SSE events sent before the fault");
  proxy->add_option("--status", f->status, "http_error: the status (429, 500, 503, ...)");
  proxy->add_option("--stall-s", f->stall_s, "stall: seconds of silence");
  proxy->add_option("--drip-bytes", f->drip_bytes, "slow_loris: bytes per write");
  proxy->add_option("--drip-ms", f->drip_ms, "slow_loris: pause between writes");
  return [proxy, upstream, fault, f]() -> int {
    if (!proxy->parsed()) return 2;
    auto kind = chaos::ParseProxyFault(*fault);
    if (!kind) return ReportError(kind.error());
    chaos::ProxyFault spec = *f;
    spec.kind = *kind;
    auto p = chaos::FaultProxy::Start(*upstream, spec);
    if (!p) return ReportError(p.error());
    std::printf("hone chaos proxy: 127.0.0.1:%d -> 127.0.0.1:%d, fault %s (Ctrl-C to stop)\n", (*p)->port(), *upstream,
                fault->c_str());
    std::fflush(stdout);
    while (!sys::InterruptRequested()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::printf("%d completion requests, %d faulted\n", (*p)->completions(), (*p)->injected());
    return 0;
  };
}

}  // namespace hone::cli
