#include "kernel/protocol.h"

#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "sys/files.h"
#include "sys/process.h"

namespace hone::kernel {

namespace {

using json = nlohmann::json;

json ToleranceJson(const Tolerance& t) {
  json j = json::object();
  if (t.atol) j["atol"] = *t.atol;
  if (t.rtol) j["rtol"] = *t.rtol;
  if (t.min_snr_db) j["min_snr_db"] = *t.min_snr_db;
  return j;
}

json CaseJson(const KernelCase& c) {
  json dims = json::object();
  for (const auto& [k, v] : c.dims) dims[k] = v;
  json params = json::object();
  for (const auto& [k, v] : c.params) {
    // Numbers travel as numbers so a backend need not re-parse them.
    if (auto d = ParseDouble(v)) {
      params[k] = *d;
    } else {
      params[k] = v;
    }
  }
  return {{"id", c.id}, {"weight", c.weight}, {"dims", dims}, {"params", params}};
}

json TaskJson(const KernelTaskSpec& t, const OpInfo& op) {
  json tols = json::object();
  for (const auto& [dtype, tol] : t.tolerances) tols[dtype] = ToleranceJson(tol);
  json cases = json::array(), held = json::array();
  for (const auto& c : t.cases) cases.push_back(CaseJson(c));
  for (const auto& c : t.held_out_cases) held.push_back(CaseJson(c));
  return {
      {"task_id", t.task_id},
      {"op", t.op},
      {"spec_sha256", t.sha256},
      {"spec_path", t.source_path},
      {"dtype", op.dtype},
      {"key_dims", op.key_dims},
      {"key_params", op.key_params},
      {"batch_dims", op.batch_dims},
      {"baseline", {{"impl", t.baseline_impls}}},
      {"reference", t.reference},
      {"tolerances", tols},
      {"constraints", {{"graph_capturable", t.graph_capturable}, {"no_host_sync", t.no_host_sync}}},
      {"timing",
       {{"l2_state", t.timing.l2_state},
        {"target_graph_ms", t.timing.target_graph_ms},
        {"replays", t.timing.replays},
        {"rounds", t.timing.rounds},
        {"runs", t.timing.runs}}},
      {"keep",
       {{"min_improve", t.keep.min_improve},
        {"confidence", t.keep.confidence},
        {"max_case_regression", t.keep.max_case_regression}}},
      {"budget", {{"max_configs_per_case", t.budget.max_configs_per_case}, {"wall_s", t.budget.wall_s}}},
      {"weights_source", t.weights_source},
      {"cases", cases},
      {"held_out_cases", held},
  };
}

template <class T>
Result<T> Get(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) return InvalidArgument(where + ": missing field '" + key + "'");
  try {
    return j.at(key).get<T>();
  } catch (const std::exception& e) {
    return InvalidArgument(where + ": field '" + key + "': " + e.what());
  }
}

Result<KernelClaim> ParseClaim(const json& j, const std::string& where, bool need_config) {
  KernelClaim c;
  HONE_ASSIGN_OR_RETURN(c.task_id, Get<std::string>(j, "task_id", where));
  c.op = j.value("op", "");
  c.case_id = j.value("case_id", "");
  c.reason = j.value("reason", "");
  if (j.contains("config")) {
    const json& cfg = j["config"];
    HONE_ASSIGN_OR_RETURN(c.config.index, Get<int>(cfg, "index", where + ".config"));
    c.config.name = cfg.value("name", "");
    c.config.num_splits = cfg.value("num_splits", 1);
    HONE_ASSIGN_OR_RETURN(c.baseline, Get<std::string>(j, "baseline", where));
    HONE_ASSIGN_OR_RETURN(c.claimed_speedup, Get<double>(j, "claimed_speedup", where));
    if (!(c.claimed_speedup > 0)) return InvalidArgument(where + ": claimed_speedup must be > 0");
  } else if (need_config) {
    return InvalidArgument(where + ": an accepted kernel needs a config");
  }
  if (need_config && c.case_id.empty()) return InvalidArgument(where + ": an accepted kernel needs a case_id");
  return c;
}

void FlattenArtifacts(const json& j, const std::string& prefix, std::map<std::string, std::string>* out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object()) {
      FlattenArtifacts(*it, key, out);
    } else if (it->is_string()) {
      (*out)[key] = it->get<std::string>();
    }
  }
}

}  // namespace

Result<std::string> WritePackageJson(const PackageInput& in, const OpCatalog& catalog) {
  json tasks = json::array();
  for (const auto& t : in.tasks) {
    const OpInfo* op = catalog.Find(t.op);
    if (op == nullptr) return InvalidArgument("task " + t.task_id + ": unknown op '" + t.op + "'");
    tasks.push_back(TaskJson(t, *op));
  }
  json best = json::object();
  for (const auto& [k, v] : in.best_config) best[k] = v;
  json pkg = {
      {"schema", "hone.kernel.package/v1"},
      {"workload", in.workload},
      {"hardware", {{"device", in.device}, {"arch", in.arch}}},
      {"best_config", best},
      {"tasks", tasks},
  };
  return pkg.dump(1) + "\n";
}

Result<BackendResult> ParseBackendResult(const std::string& text, const std::string& source_name) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument(source_name + ": not a JSON object");
  HONE_ASSIGN_OR_RETURN(std::string schema, Get<std::string>(j, "schema", source_name));
  if (schema != "hone.kernel.result/v1") {
    return InvalidArgument(source_name + ": unsupported schema '" + schema + "' (expected hone.kernel.result/v1)");
  }
  BackendResult r;
  HONE_ASSIGN_OR_RETURN(r.backend, Get<std::string>(j, "backend", source_name));
  HONE_ASSIGN_OR_RETURN(r.status, Get<std::string>(j, "status", source_name));
  if (r.status != "ok" && r.status != "no_gain") {
    return InvalidArgument(source_name + ": status must be ok or no_gain (got '" + r.status + "')");
  }
  r.compiler = j.value("compiler", "");
  if (!j.contains("accepted") || !j["accepted"].is_array()) {
    return InvalidArgument(source_name + ": missing array 'accepted'");
  }
  for (size_t i = 0; i < j["accepted"].size(); ++i) {
    HONE_ASSIGN_OR_RETURN(KernelClaim c, ParseClaim(j["accepted"][i], source_name + ": accepted[" + std::to_string(i) + "]", true));
    r.accepted.push_back(std::move(c));
  }
  if (j.contains("rejected") && j["rejected"].is_array()) {
    for (size_t i = 0; i < j["rejected"].size(); ++i) {
      HONE_ASSIGN_OR_RETURN(KernelClaim c, ParseClaim(j["rejected"][i], source_name + ": rejected[" + std::to_string(i) + "]", false));
      r.rejected.push_back(std::move(c));
    }
  }
  if (j.contains("artifacts") && j["artifacts"].is_object()) FlattenArtifacts(j["artifacts"], "", &r.artifacts);
  return r;
}

Result<BackendResult> RunBackend(const BackendCommand& cmd, const std::string& package_path,
                                 const std::string& result_path) {
  if (cmd.argv.empty()) return InvalidArgument("no backend command given");
  sys::ProcessSpec spec;
  spec.argv = cmd.argv;
  spec.argv.insert(spec.argv.end(), {"--package", package_path, "--result", result_path});
  spec.log_path = cmd.log_path;
  std::error_code ec;
  std::filesystem::remove(result_path, ec);  // a stale result must not pass for this run's
  sys::ProcessRunner& runner = cmd.runner != nullptr ? *cmd.runner : sys::DefaultProcessRunner();
  HONE_ASSIGN_OR_RETURN(sys::CommandOutput out, runner.Run(spec, cmd.timeout));
  if (!out.status.success()) {
    return Fail(Error{ErrorCode::kUnavailable,
                      "kernel backend " + ShellQuote(cmd.argv[0]) + " failed (" + out.status.ToString() + ")",
                      {{"output_tail", LastLines(out.output, 20)}}});
  }
  auto text = sys::ReadFile(result_path);
  if (!text) {
    return Fail(Error{ErrorCode::kUnavailable, "kernel backend exited 0 but wrote no result at " + result_path,
                      {{"output_tail", LastLines(out.output, 20)}}});
  }
  return ParseBackendResult(*text, result_path);
}

}  // namespace hone::kernel
