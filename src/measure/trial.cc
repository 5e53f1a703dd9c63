#include "measure/trial.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "bench/result_io.h"
#include "core/strings.h"
#include "sys/files.h"

namespace hone::measure {

using json = nlohmann::json;

namespace {

constexpr TrialRole kRoles[] = {TrialRole::kWarmup,    TrialRole::kBaseline,  TrialRole::kAa,
                                TrialRole::kScreen,    TrialRole::kIncumbent, TrialRole::kCandidate,
                                TrialRole::kReplay,    TrialRole::kEnablement, TrialRole::kSweep,
                                TrialRole::kValidate,  TrialRole::kSurface};

}  // namespace

std::string_view TrialRoleName(TrialRole role) {
  switch (role) {
    case TrialRole::kWarmup: return "warmup";
    case TrialRole::kBaseline: return "baseline";
    case TrialRole::kAa: return "aa";
    case TrialRole::kScreen: return "screen";
    case TrialRole::kIncumbent: return "incumbent";
    case TrialRole::kCandidate: return "candidate";
    case TrialRole::kReplay: return "replay";
    case TrialRole::kEnablement: return "enablement";
    case TrialRole::kSweep: return "sweep";
    case TrialRole::kValidate: return "validate";
    case TrialRole::kSurface: return "surface";
  }
  return "?";
}

Result<TrialRole> ParseTrialRole(std::string_view name) {
  for (TrialRole r : kRoles) {
    if (TrialRoleName(r) == name) return r;
  }
  return InvalidArgument("unknown trial role '" + std::string(name) + "'");
}

std::string OperatingPoint::Label() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "c%d isl%lld osl%lld", concurrency, static_cast<long long>(isl),
                static_cast<long long>(osl));
  return buf;
}

ObjectiveCheck EvaluateObjective(const bench::BenchResult& r, const spec::ObjectiveSpec& objective) {
  ObjectiveCheck c;
  if (auto v = bench::Metric(r, objective.metric)) {
    c.value = *v;
    c.available = true;
  }
  for (const auto& slo : objective.slos) {
    auto v = bench::Metric(r, slo.metric);
    bool ok = v && (slo.at_least ? *v >= slo.value : *v <= slo.value);
    if (!ok) {
      char buf[160];
      if (v) {
        std::snprintf(buf, sizeof buf, "%s = %.4g violates %s", slo.metric.c_str(), *v, slo.ToString().c_str());
      } else {
        std::snprintf(buf, sizeof buf, "%s unavailable for %s", slo.metric.c_str(), slo.ToString().c_str());
      }
      c.violations.push_back(buf);
      c.slo_ok = false;
    }
  }
  return c;
}

PooledSlo CheckPooledSlo(const std::vector<const bench::BenchResult*>& results, const spec::ObjectiveSpec& objective) {
  PooledSlo p;
  p.trials = static_cast<int>(results.size());
  const bench::BenchResult pooled = bench::PoolResults(results);
  p.requests = pooled.successful;
  spec::ObjectiveSpec constraints;
  constraints.slos = objective.slos;
  const ObjectiveCheck c = EvaluateObjective(pooled, constraints);
  p.ok = c.slo_ok && !results.empty();
  p.violations = c.violations;
  if (results.empty()) p.violations.push_back("no trial measured");
  for (const auto& slo : objective.slos) {
    auto v = bench::Metric(pooled, slo.metric);
    double miss = 1e9;
    if (v && slo.value != 0) miss = std::max(0.0, (slo.at_least ? slo.value - *v : *v - slo.value) / std::fabs(slo.value));
    if (v && slo.value == 0) miss = (slo.at_least ? *v >= 0 : *v <= 0) ? 0 : 1e9;
    p.excess = std::max(p.excess, miss);
  }
  if (results.empty()) p.excess = 1e9;
  return p;
}

std::string PooledSlo::Describe() const {
  const std::string pooled =
      " (pooled over " + std::to_string(requests) + " requests of " + std::to_string(trials) + " trials)";
  if (ok) return "meets the SLO" + pooled;
  return Join(violations, "; ") + pooled;
}

std::vector<std::string> FaultsOf(const bench::BenchResult& r) {
  static const char* kFaults[] = {"connection_refused", "connection_reset", "stalled",  "timeout",
                                  "truncated",          "malformed",        "http_429", "http_500",
                                  "http_503",           "http_5xx",         "stream_error", "slow_stream"};
  std::vector<std::string> out;
  for (const char* f : kFaults) {
    auto it = r.error_categories.find(f);
    if (it != r.error_categories.end() && it->second > 0) out.push_back(std::string(f) + " x" + std::to_string(it->second));
    it = r.warmup_error_categories.find(f);
    if (it != r.warmup_error_categories.end() && it->second > 0) {
      out.push_back("warm-up " + std::string(f) + " x" + std::to_string(it->second));
    }
  }
  return out;
}

Status WriteTrialOutcome(const TrialOutcome& o) {
  json cfg = json::object();
  for (const auto& [k, v] : o.config.values()) cfg[k] = v;
  json j = {{"id", o.id},
            {"role", TrialRoleName(o.role)},
            {"config", cfg},
            {"point", {{"concurrency", o.point.concurrency}, {"isl", o.point.isl}, {"osl", o.point.osl}}},
            {"launched", o.launched},
            {"failure_kind", o.failure_kind},
            {"failure_detail", o.failure_detail},
            {"valid", o.valid},
            {"invalid_reasons", o.invalid_reasons},
            {"faults", o.faults},
            {"retry_of", o.retry_of},
            {"injected", o.injected},
            {"relaunches", o.relaunches},
            {"server_pid", o.server_pid},
            {"objective", o.objective},
            {"slo_ok", o.slo_ok},
            {"slo_violations", o.slo_violations},
            {"error_rate", o.error_rate},
            {"wall_s", o.wall_s},
            {"startup_s", o.startup_s},
            {"start_unix_us", o.start_unix_us},
            {"command", o.command}};
  return sys::WriteFileAtomic(std::filesystem::path(o.dir) / "outcome.json", j.dump(2) + "\n");
}

Result<TrialOutcome> ReadTrialOutcome(const std::string& dir) {
  HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(std::filesystem::path(dir) / "outcome.json"));
  HONE_ASSIGN_OR_RETURN(TrialOutcome o, TryCatch(ErrorCode::kDataLoss, "reading " + dir + "/outcome.json", [&] {
    json j = json::parse(text);
    TrialOutcome t;
    t.id = j.at("id");
    auto role = ParseTrialRole(j.at("role").get<std::string>());
    if (!role) throw std::runtime_error(role.error().message);
    t.role = *role;
    for (auto& [k, v] : j.at("config").items()) t.config.Set(k, v.get<std::string>());
    t.point.concurrency = j["point"].value("concurrency", 1);
    t.point.isl = j["point"].value("isl", int64_t{0});
    t.point.osl = j["point"].value("osl", int64_t{0});
    t.launched = j.value("launched", false);
    t.failure_kind = j.value("failure_kind", "");
    t.failure_detail = j.value("failure_detail", "");
    t.valid = j.value("valid", false);
    t.invalid_reasons = j.value("invalid_reasons", std::vector<std::string>{});
    t.faults = j.value("faults", std::vector<std::string>{});
    t.retry_of = j.value("retry_of", "");
    t.injected = j.value("injected", "");
    t.relaunches = j.value("relaunches", std::vector<std::string>{});
    t.server_pid = j.value("server_pid", 0);
    t.objective = j.value("objective", 0.0);
    t.slo_ok = j.value("slo_ok", true);
    t.slo_violations = j.value("slo_violations", std::vector<std::string>{});
    t.error_rate = j.value("error_rate", 0.0);
    t.wall_s = j.value("wall_s", 0.0);
    t.startup_s = j.value("startup_s", 0.0);
    t.start_unix_us = j.value("start_unix_us", int64_t{0});
    t.command = j.value("command", "");
    t.dir = dir;
    return t;
  }));
  std::string result = (std::filesystem::path(dir) / "result.json").string();
  if (o.launched && sys::FileExists(result)) {
    HONE_ASSIGN_OR_RETURN(o.result, bench::ReadResultJson(result));
  }
  return o;
}

}  // namespace hone::measure
