#include "chaos/plan.h"

#include <sys/stat.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "sys/files.h"

namespace hone::chaos {

using json = nlohmann::json;

Result<FaultPlan> FaultPlan::Parse(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("faults") || !j["faults"].is_array()) {
    return InvalidArgument("chaos plan: expected {\"faults\": [...]}");
  }
  FaultPlan plan;
  int index = 0;
  for (const json& r : j["faults"]) {
    const std::string where = "chaos plan: faults[" + std::to_string(index++) + "]";
    if (!r.is_object() || !r.contains("fault") || !r["fault"].is_string()) return InvalidArgument(where + ": no fault");
    Rule rule;
    try {
      rule.trial = r.value("trial", "");
      rule.role = r.value("role", "");
      rule.nth = r.value("nth", 1);
      TrialFaults& f = rule.faults;
      f.name = r["fault"].get<std::string>();
      f.at_request = r.value("at_request", f.at_request);
      if (f.name == "kill_server") {
        f.server = ServerFaultKind::kKill;
      } else if (f.name == "stop_server") {
        f.server = ServerFaultKind::kStop;
      } else if (f.name == "oom_at_launch") {
        f.server = ServerFaultKind::kOomAtLaunch;
      } else if (f.name == "port_taken") {
        f.server = ServerFaultKind::kPortTaken;
      } else {
        auto kind = ParseProxyFault(f.name);
        if (!kind) return InvalidArgument(where + ": " + kind.error().message);
        ProxyFault& p = f.proxy;
        p.kind = *kind;
        p.first = r.value("first", p.first);
        p.count = r.value("count", p.count);
        p.every = r.value("every", p.every);
        p.after_events = r.value("after_events", p.after_events);
        p.status = r.value("status", p.status);
        p.stall_s = r.value("stall_s", p.stall_s);
        p.drip_bytes = std::max(1, r.value("drip_bytes", p.drip_bytes));
        p.drip_ms = r.value("drip_ms", p.drip_ms);
      }
    } catch (const json::exception& e) {
      return InvalidArgument(where + ": " + e.what());
    }
    if (rule.trial.empty() && rule.role.empty()) return InvalidArgument(where + ": name a trial or a role");
    plan.rules_.push_back(std::move(rule));
  }
  return plan;
}

Result<FaultPlan> FaultPlan::Load(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(path));
  auto plan = Parse(text);
  if (!plan) return InvalidArgument(path + ": " + plan.error().message);
  return plan;
}

TrialFaults FaultPlan::For(const std::string& trial_id, const std::string& role) {
  const int nth = ++seen_[role];
  for (const Rule& r : rules_) {
    if (!r.trial.empty() && r.trial == trial_id) return r.faults;
    if (r.trial.empty() && r.role == role && r.nth == nth) return r.faults;
  }
  return {};
}

Result<std::string> WriteOomStandIn(const std::string& dir) {
  std::string path = (std::filesystem::path(dir) / "oom-server.sh").string();
  HONE_TRY(sys::WriteFileAtomic(path,
                                "#!/bin/sh\n"
                                "# hone chaos: a server launch that runs out of memory.\n"
                                "echo 'load_tensors: loading model tensors, this can take a while...' >&2\n"
                                "echo 'ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size "
                                "68719476736' >&2\n"
                                "echo 'llama_model_load: error loading model: unable to allocate CPU buffer' >&2\n"
                                "exit 1\n"));
  if (chmod(path.c_str(), 0755) != 0) return Internal("cannot make " + path + " executable");
  return path;
}

}  // namespace hone::chaos
