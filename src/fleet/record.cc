#include "fleet/record.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "sys/files.h"

namespace hone::fleet {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

Result<json> ReadJson(const std::string& path) {
  if (!sys::FileExists(path)) return NotFound("not found: " + path);
  HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(path));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return DataLoss(path + ": not a JSON object");
  return j;
}

Status WriteJson(const std::string& path, const json& j) { return sys::WriteFileAtomic(path, j.dump(2) + "\n"); }

template <class T>
T Get(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  auto v = TryCatch(ErrorCode::kDataLoss, key, [&] { return it->template get<T>(); });
  return v ? *v : fallback;
}

}  // namespace

// ---- job records ----

double JobRecord::WallSeconds(int64_t now_unix_us) const {
  double total = 0;
  for (const Attempt& a : attempts) {
    int64_t end = a.finished_unix_us > 0 ? a.finished_unix_us : now_unix_us;
    if (end > a.started_unix_us && a.started_unix_us > 0) total += static_cast<double>(end - a.started_unix_us) * 1e-6;
  }
  return total;
}

Result<JobRecord> ReadJobRecord(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(json j, ReadJson(path));
  JobRecord r;
  r.session = Get<std::string>(j, "session", "");
  if (auto it = j.find("attempts"); it != j.end() && it->is_array()) {
    for (const json& a : *it) {
      if (!a.is_object()) continue;
      r.attempts.push_back({Get<int>(a, "number", 0), Get<std::string>(a, "mode", ""), Get<std::string>(a, "host", ""),
                            Get<std::string>(a, "scheduler_job", ""), Get<int>(a, "restart", 0),
                            Get<int64_t>(a, "started_unix_us", 0), Get<int64_t>(a, "finished_unix_us", 0),
                            Get<int>(a, "exit_code", -1), Get<std::string>(a, "note", "")});
    }
  }
  return r;
}

Status WriteJobRecord(const std::string& path, const JobRecord& r) {
  json attempts = json::array();
  for (const Attempt& a : r.attempts) {
    attempts.push_back({{"number", a.number}, {"mode", a.mode}, {"host", a.host}, {"scheduler_job", a.scheduler_job},
                        {"restart", a.restart}, {"started_unix_us", a.started_unix_us},
                        {"finished_unix_us", a.finished_unix_us}, {"exit_code", a.exit_code}, {"note", a.note}});
  }
  return WriteJson(path, {{"schema", "hone-fleet-job/1"}, {"session", r.session}, {"attempts", attempts}});
}

// ---- run directories ----

double RunOutcome::ValidatedRatio() const { return validated && verdict == "KEEP" ? 1 + gain : 1.0; }

std::string RunOutcome::Start() const {
  if (replayed) {
    std::string what = warm_replay.substr(0, warm_replay.find(" ("));
    return "warm (" + (what.empty() ? std::string("replayed a recipe") : what) + ")";
  }
  if (warm_replay.find("priors only") != std::string::npos) return "warm (priors)";
  return "cold";
}

Result<RunOutcome> ReadRunOutcome(const std::string& run_dir) {
  RunOutcome o;
  auto state = ReadJson((fs::path(run_dir) / "state.json").string());
  if (!state && state.error().code != ErrorCode::kNotFound) return Fail(state.error());
  if (state) {
    o.has_state = true;
    o.phase = Get<std::string>(*state, "phase", "");
    o.trials_run = Get<int>(*state, "trials_run", 0);
    o.stop_reason = Get<std::string>(*state, "stop_reason", "");
    o.stock = o.best = Get<double>(*state, "baseline_objective", 0);
    o.warm_replay = Get<std::string>(*state, "warm_replay", "");
  }
  auto summary = ReadJson((fs::path(run_dir) / "summary.json").string());
  if (!summary && summary.error().code != ErrorCode::kNotFound) return Fail(summary.error());
  if (!summary) return o;
  const json& s = *summary;
  o.has_summary = true;
  o.stop_reason = Get<std::string>(s, "stop_reason", o.stop_reason);
  o.trials_run = Get<int>(s, "trials_run", o.trials_run);
  if (auto it = s.find("objective"); it != s.end() && it->is_object()) {
    o.metric = Get<std::string>(*it, "metric", "");
    o.maximize = Get<bool>(*it, "maximize", true);
  }
  if (auto it = s.find("baseline"); it != s.end() && it->is_object()) o.stock = o.best = Get<double>(*it, "value", 0);
  if (auto it = s.find("validated"); it != s.end() && it->is_object()) {
    o.validated = true;
    o.gain = Get<double>(*it, "gain", 0);
    o.verdict = Get<std::string>(*it, "verdict", "");
    o.accuracy = Get<std::string>(*it, "accuracy", "");
    o.stock = Get<double>(*it, "stock_value", o.stock);
    o.best = Get<double>(*it, "best_value", o.stock);
    if (auto ci = it->find("ci"); ci != it->end() && ci->is_array() && ci->size() == 2) {
      o.ci_lo = (*ci)[0].is_number() ? (*ci)[0].get<double>() : 0;
      o.ci_hi = (*ci)[1].is_number() ? (*ci)[1].get<double>() : 0;
    }
  }
  o.model = Get<std::string>(s, "model", "");
  o.model_parameters = Get<uint64_t>(s, "model_parameters", 0);
  o.precision = Get<std::string>(s, "precision", "");
  o.hardware = Get<std::string>(s, "hardware", "");
  o.framework_version = Get<std::string>(s, "framework_version", "");
  o.warm_replay = Get<std::string>(s, "warm_replay", o.warm_replay);
  o.kb_result = Get<std::string>(s, "kb_result", "");
  if (auto it = s.find("candidates"); it != s.end() && it->is_array()) {
    for (const json& c : *it) {
      if (c.is_object() && Get<std::string>(c, "phase", "") == "prelude") o.replayed = true;
    }
  }
  return o;
}

// ---- the fleet ----

Result<FleetState> ReadFleetState(const std::string& fleet_dir) {
  HONE_ASSIGN_OR_RETURN(json j, ReadJson((fs::path(fleet_dir) / "fleet.json").string()));
  if (Get<std::string>(j, "schema", "") != "hone-fleet/1") {
    return DataLoss(fleet_dir + "/fleet.json: not a hone fleet (schema hone-fleet/1)");
  }
  FleetState f;
  f.name = Get<std::string>(j, "name", "");
  f.source = Get<std::string>(j, "source", "");
  f.executor = Get<std::string>(j, "executor", "local");
  f.executor_detail = Get<std::string>(j, "executor_detail", "");
  f.kb = Get<std::string>(j, "kb", "");
  f.retries = Get<int>(j, "retries", 1);
  f.created_unix_us = Get<int64_t>(j, "created_unix_us", 0);
  f.finished_unix_us = Get<int64_t>(j, "finished_unix_us", 0);
  f.cancelled = Get<bool>(j, "cancelled", false);
  f.plan = Get<std::vector<std::string>>(j, "plan", {});
  if (auto it = j.find("overrides"); it != j.end() && it->is_object()) {
    for (const auto& [k, v] : it->items()) {
      if (v.is_string()) f.overrides.emplace_back(k, v.get<std::string>());
    }
  }
  if (auto it = j.find("sessions"); it != j.end() && it->is_array()) {
    for (const json& s : *it) {
      SessionEntry e;
      e.name = Get<std::string>(s, "name", "");
      e.engine = Get<std::string>(s, "engine", "");
      e.model = Get<std::string>(s, "model", "");
      e.precision = Get<std::string>(s, "precision", "");
      e.workload = Get<std::string>(s, "workload", "");
      e.workload_kind = Get<std::string>(s, "workload_kind", "");
      e.workload_detail = Get<std::string>(s, "workload_detail", "");
      e.budget_s = Get<double>(s, "budget_s", 0);
      e.cpus = Get<int>(s, "cpus", 0);
      e.gpus = Get<int>(s, "gpus", 0);
      e.mem_mb = Get<int64_t>(s, "mem_mb", 0);
      e.time_limit_s = Get<double>(s, "time_limit_s", 0);
      e.wave = Get<int>(s, "wave", 0);
      e.parent = Get<std::string>(s, "parent", "");
      e.relatedness = Get<double>(s, "relatedness", 0);
      e.status = Get<std::string>(s, "status", "planned");
      e.job_ids = Get<std::vector<std::string>>(s, "job_ids", {});
      e.reason = Get<std::string>(s, "reason", "");
      e.node = Get<std::string>(s, "node", "");
      if (e.name.empty()) return DataLoss(fleet_dir + "/fleet.json: a session without a name");
      f.sessions.push_back(std::move(e));
    }
  }
  return f;
}

Status WriteFleetState(const std::string& fleet_dir, const FleetState& f) {
  json sessions = json::array();
  for (const SessionEntry& e : f.sessions) {
    sessions.push_back({{"name", e.name}, {"engine", e.engine}, {"model", e.model}, {"precision", e.precision},
                        {"workload", e.workload}, {"workload_kind", e.workload_kind},
                        {"workload_detail", e.workload_detail}, {"budget_s", e.budget_s}, {"cpus", e.cpus},
                        {"gpus", e.gpus}, {"mem_mb", e.mem_mb}, {"time_limit_s", e.time_limit_s}, {"wave", e.wave}, {"parent", e.parent}, {"relatedness", e.relatedness},
                        {"status", e.status}, {"job_ids", e.job_ids}, {"reason", e.reason}, {"node", e.node}});
  }
  json j = {{"schema", "hone-fleet/1"},
            {"name", f.name},
            {"source", f.source},
            {"executor", f.executor},
            {"executor_detail", f.executor_detail},
            {"kb", f.kb},
            {"retries", f.retries},
            {"created_unix_us", f.created_unix_us},
            {"finished_unix_us", f.finished_unix_us},
            {"cancelled", f.cancelled},
            {"overrides", json::object()},
            {"plan", f.plan},
            {"sessions", sessions}};
  for (const auto& [k, v] : f.overrides) j["overrides"][k] = v;
  return WriteJson((fs::path(fleet_dir) / "fleet.json").string(), j);
}

}  // namespace hone::fleet
