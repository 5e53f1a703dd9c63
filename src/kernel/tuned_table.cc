#include "kernel/tuned_table.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <limits>
#include <regex>

#include "core/strings.h"
#include "sys/files.h"

namespace hone::kernel {

namespace {
using json = nlohmann::json;
}  // namespace

std::string CompilerTag(const std::string& compiler) {
  std::smatch m;
  static const std::regex kRelease(R"(release ([0-9]+\.[0-9]+))");
  if (std::regex_search(compiler, m, kRelease)) return "nvcc_" + m[1].str();
  return "unknown";
}

std::string DeviceTag(const std::string& device_name) {
  std::string s = device_name;
  for (char& c : s) {
    if (c == ' ' || c == '-' || c == '/') c = '_';
  }
  return s;
}

Result<std::vector<TunedTableFile>> BuildTunedTables(const BenchResult& bench, const std::vector<TaskSummary>& tasks,
                                                     const OpCatalog& catalog, const std::string& measurement_ref) {
  std::map<std::string, json> files;  // file name -> content
  const std::string subdir = CompilerTag(bench.compiler);
  for (const TaskSummary& ts : tasks) {
    const TaskResult& t = *ts.result;
    const OpInfo* op = catalog.Find(t.op);
    if (op == nullptr) return InvalidArgument("measurement has unknown op '" + t.op + "'");
    for (const CaseSummary& cs : ts.cases) {
      const CaseResult& c = *cs.result;
      if (c.held_out || cs.decision.runs == 0) continue;  // tables hold tuned, measured shapes only
      std::vector<std::string> key{"op=" + t.op};
      for (const auto& d : op->key_dims) {
        auto it = c.dims.find(d);
        if (it == c.dims.end()) return InvalidArgument(t.task_id + "/" + c.case_id + ": missing key dim " + d);
        key.push_back(d + "=" + std::to_string(it->second));
      }
      for (const auto& p : op->key_params) {
        auto it = c.params.find(p);
        if (it == c.params.end()) return InvalidArgument(t.task_id + "/" + c.case_id + ": missing key param " + p);
        key.push_back(p + "=" + it->second);
      }
      key.push_back("device_name=" + DeviceTag(bench.device_name));
      key.push_back("dtype=" + op->dtype);
      std::string name = Join(key, ",") + ".json";
      std::vector<std::string> batch;
      for (const auto& d : op->batch_dims) batch.push_back(std::to_string(c.dims.at(d)));
      json& f = files[name];
      f[Join(batch, ",")] = {
          {"config", c.config.name},
          {"config_index", c.config.index},
          {"num_splits", c.config.num_splits},
          {"speedup", std::round(cs.decision.speedup * 1000) / 1000},
          {"use", cs.decision.verdict == Verdict::kKeep},
          {"case_id", c.case_id},
          {"baseline", c.baseline},
      };
      f["_meta"] = {{"op", t.op},
                    {"batch_dims", op->batch_dims},
                    {"device_name", DeviceTag(bench.device_name)},
                    {"compiler", bench.compiler},
                    {"spec_sha256", t.spec_sha256},
                    {"measurement", measurement_ref}};
    }
  }
  std::vector<TunedTableFile> out;
  for (auto& [name, content] : files) out.push_back({subdir, name, content.dump(1) + "\n"});
  return out;
}

Status WriteTunedTables(const std::string& dir, const std::vector<TunedTableFile>& files) {
  for (const TunedTableFile& f : files) {
    std::filesystem::path sub = std::filesystem::path(dir) / f.subdir;
    HONE_TRY(sys::EnsureDir(sub));
    HONE_TRY(sys::WriteFileAtomic(sub / f.file_name, f.json));
  }
  return Ok();
}

Result<TunedChoice> LookupTuned(const std::string& table_json, const std::vector<int64_t>& batch_values) {
  json j = json::parse(table_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("tuned table is not a JSON object");
  TunedChoice best;
  double best_dist = std::numeric_limits<double>::infinity();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "_meta" || !it->is_object()) continue;
    std::vector<std::string> parts = Split(it.key(), ',');
    if (parts.size() != batch_values.size()) {
      return InvalidArgument("tuned table key '" + it.key() + "' has " + std::to_string(parts.size()) +
                             " batch dims, the lookup " + std::to_string(batch_values.size()));
    }
    double dist = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      HONE_ASSIGN_OR_RETURN(int64_t v, ParseInt(parts[i]));
      dist += std::fabs(std::log(std::max<double>(1.0, static_cast<double>(v))) -
                        std::log(std::max<double>(1.0, static_cast<double>(batch_values[i]))));
    }
    if (dist < best_dist) {
      best_dist = dist;
      best.batch_key = it.key();
      best.config.name = it->value("config", "");
      best.config.index = it->value("config_index", -1);
      best.config.num_splits = it->value("num_splits", 1);
      best.speedup = it->value("speedup", 0.0);
      best.use = it->value("use", false);
    }
  }
  if (best.batch_key.empty()) return NotFound("tuned table has no entries");
  return best;
}

}  // namespace hone::kernel
