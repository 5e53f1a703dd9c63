// FaultPlan: which faults a session under test injects into which of its trials.
//
// Test-only: `hone run` reads a plan from the file named by HONE_CHAOS_PLAN and the
// trial executor applies it; without the variable nothing here is used. A plan is
// JSON: {"faults": [RULE, ...]}, and a rule names the trials it hits, by id
// ("trial": "t0007") or by role and occurrence ("role": "candidate", "nth": 2 = the
// second candidate trial), and the fault with its parameters:
//   proxy faults (chaos/fault_proxy.h): "drop_mid_stream", "stall", "http_error",
//     "malformed_sse", "truncated_sse", "slow_loris", with "first", "count",
//     "every", "after_events", "status", "stall_s", "drip_bytes", "drip_ms";
//   server faults: "kill_server" (SIGKILL to its process group when the benchmark
//     sends its "at_request"-th completion request, 0-based), "stop_server" (SIGSTOP
//     at the same moment: a hung server), "oom_at_launch"
//     (the launch exits with an out-of-memory message), "port_taken" (another
//     listener takes the chosen port between the check and the server's bind, and
//     answers /health as if it were a server).
// Not thread-safe: the executor asks once per trial, in order.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "chaos/fault_proxy.h"
#include "core/error.h"

namespace hone::chaos {

enum class ServerFaultKind { kNone, kKill, kStop, kOomAtLaunch, kPortTaken };

struct TrialFaults {
  std::string name;                 // the rule's fault name, as written in the plan
  ProxyFault proxy;                 // kind kNone: no proxy
  ServerFaultKind server = ServerFaultKind::kNone;
  int at_request = 2;               // kill_server, stop_server: when this request arrives
  bool any() const { return proxy.kind != ProxyFaultKind::kNone || server != ServerFaultKind::kNone; }
};

class FaultPlan {
 public:
  static Result<FaultPlan> Parse(const std::string& json_text);
  static Result<FaultPlan> Load(const std::string& path);
  // The faults of the trial about to run (none when no rule names it).
  TrialFaults For(const std::string& trial_id, const std::string& role);
  size_t size() const { return rules_.size(); }

 private:
  struct Rule {
    std::string trial;
    std::string role;
    int nth = 1;
    TrialFaults faults;
  };
  std::vector<Rule> rules_;
  std::map<std::string, int> seen_;  // trials asked for, per role
};

// The out-of-memory stand-in for oom_at_launch: a script in `dir` that prints what
// llama.cpp prints when an allocation fails, and exits 1. Returns its path.
Result<std::string> WriteOomStandIn(const std::string& dir);

}  // namespace hone::chaos
