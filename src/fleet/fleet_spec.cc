#include "fleet/fleet_spec.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <set>

#include "core/strings.h"
#include "kb/spec_workload.h"
#include "spec/yaml.h"
#include "sys/files.h"

namespace hone::fleet {

namespace {

using spec::Field;

bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; }

// Letters, digits and - _ . only (the name becomes a file, a directory and a job name).
std::string Sanitize(std::string_view s) {
  std::string out;
  for (char c : s) out += IsNameChar(c) ? c : '-';
  return out;
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%gs", s);
  return buf;
}

// Copies src's entries over dst's (maps merge key by key; anything else replaces).
void MergeInto(YAML::Node dst, const YAML::Node& src) {
  for (const auto& kv : src) {
    std::string key = kv.first.as<std::string>();
    YAML::Node slot = dst[key];
    if (kv.second.IsMap() && slot.IsMap()) {
      MergeInto(slot, kv.second);
    } else {
      dst[key] = YAML::Clone(kv.second);
    }
  }
}

// A field that may be one value or a list of them.
std::vector<Field> OneOrMany(const Field& f) {
  if (!f.defined()) return {};
  if (f.is_seq()) return f.Items();
  return {f};
}

Result<int64_t> ParseMemMb(const Field& f) {
  if (!f.defined()) return 0;
  HONE_ASSIGN_OR_RETURN(std::string text, f.Str());
  std::string t = ToLower(std::string(Trim(text)));
  double scale = 1;  // MB by default, as sbatch --mem
  if (t.ends_with("g") || t.ends_with("gb")) {
    scale = 1024;
  } else if (t.ends_with("t") || t.ends_with("tb")) {
    scale = 1024 * 1024;
  }
  while (!t.empty() && std::isalpha(static_cast<unsigned char>(t.back()))) t.pop_back();
  auto v = ParseDouble(t);
  if (!v || *v < 0) return Fail(f.Err("a memory size such as 16G or 8000M (got '" + text + "')"));
  return static_cast<int64_t>(*v * scale);
}

Result<JobResources> ParseResources(const Field& f, JobResources base) {
  if (!f.defined()) return base;
  HONE_TRY(f.RequireMap());
  HONE_TRY(f.CheckKeys({"cpus", "gpus", "mem"}));
  HONE_ASSIGN_OR_RETURN(int64_t cpus, f["cpus"].IntOr(base.cpus, 1, 4096));
  HONE_ASSIGN_OR_RETURN(int64_t gpus, f["gpus"].IntOr(base.gpus, 0, 64));
  base.cpus = static_cast<int>(cpus);
  base.gpus = static_cast<int>(gpus);
  if (f["mem"].defined()) {
    HONE_ASSIGN_OR_RETURN(base.mem_mb, ParseMemMb(f["mem"]));
  }
  return base;
}

Result<ExecutorSpec> ParseExecutor(const Field& f) {
  ExecutorSpec e;
  if (!f.defined()) return e;
  HONE_TRY(f.RequireMap());
  HONE_TRY(f.CheckKeys({"kind", "poll", "time_margin", "max_parallel", "partition", "account", "qos", "gpu_request",
                        "sbatch_args", "setup", "hone", "cache_dir"}));
  HONE_ASSIGN_OR_RETURN(e.kind, f["kind"].StrOr("local"));
  if (e.kind != "local" && e.kind != "slurm") {
    return Fail(f["kind"].Err("must be local or slurm (got '" + e.kind + "'); see docs/fleet.md"));
  }
  HONE_ASSIGN_OR_RETURN(std::string poll, f["poll"].StrOr("5s"));
  auto poll_s = spec::ParseDurationSeconds(poll);
  if (!poll_s || *poll_s <= 0) return Fail(f["poll"].Err("a duration such as 5s (got '" + poll + "')"));
  e.poll_s = *poll_s;
  HONE_ASSIGN_OR_RETURN(std::string margin, f["time_margin"].StrOr("10m"));
  auto margin_s = spec::ParseDurationSeconds(margin);
  if (!margin_s || *margin_s < 0) return Fail(f["time_margin"].Err("a duration such as 10m (got '" + margin + "')"));
  e.time_margin_s = *margin_s;
  HONE_ASSIGN_OR_RETURN(int64_t max_parallel, f["max_parallel"].IntOr(0, 0, 4096));
  e.max_parallel = static_cast<int>(max_parallel);
  HONE_ASSIGN_OR_RETURN(e.partition, f["partition"].StrOr(""));
  HONE_ASSIGN_OR_RETURN(e.account, f["account"].StrOr(""));
  HONE_ASSIGN_OR_RETURN(e.qos, f["qos"].StrOr(""));
  HONE_ASSIGN_OR_RETURN(e.gpu_request, f["gpu_request"].StrOr("--gres=gpu:{n}"));
  if (e.gpu_request.find("{n}") == std::string::npos) {
    return Fail(f["gpu_request"].Err("must contain {n}, the number of GPUs (e.g. --gpus={n})"));
  }
  if (f["sbatch_args"].defined()) {
    HONE_ASSIGN_OR_RETURN(e.sbatch_args, f["sbatch_args"].StrList());
  }
  if (f["setup"].defined()) {
    HONE_ASSIGN_OR_RETURN(e.setup, f["setup"].StrList());
  }
  HONE_ASSIGN_OR_RETURN(e.hone, f["hone"].StrOr(""));
  HONE_ASSIGN_OR_RETURN(e.cache_dir, f["cache_dir"].StrOr(""));
  return e;
}

std::string ModelLabel(const YAML::Node& model) {
  if (model.IsScalar()) return std::filesystem::path(model.as<std::string>()).stem().string();
  if (model["preset"]) return model["preset"].as<std::string>();
  if (model["path"]) return std::filesystem::path(model["path"].as<std::string>()).stem().string();
  return "model";
}

// The model name a session gives the knowledge base (run/engine: synthesized
// presets are "hone-<preset>-s<seed>", files their stem).
std::string KbModelName(const spec::ModelRef& m) {
  if (!m.path.empty()) return std::filesystem::path(m.path).stem().string();
  return "hone-" + m.preset + "-s" + std::to_string(m.seed);
}

bool Selected(const std::string& name, const std::vector<std::string>& only) {
  if (only.empty()) return true;
  for (const std::string& o : only) {
    if (o == name) return true;
    if (o.ends_with("*") && name.starts_with(o.substr(0, o.size() - 1))) return true;
  }
  return false;
}

struct Entry {
  Field field;
  std::string prefix;
  std::vector<Field> models;
  std::vector<std::string> precisions;
  std::vector<Field> workloads;
  double budget_s = 0;
  JobResources resources;
  std::string engine;
};

Result<Entry> ParseEntry(const Field& f, const JobResources& base_resources, double default_budget_s) {
  HONE_TRY(f.RequireMap());
  HONE_TRY(f.CheckKeys({"name", "model", "engine", "precision", "workload", "budget", "gpus", "cpus", "mem",
                        "session"}));
  Entry e{f, "", {}, {}, {}, default_budget_s, base_resources, "llama.cpp"};
  HONE_ASSIGN_OR_RETURN(e.prefix, f["name"].StrOr(""));
  HONE_ASSIGN_OR_RETURN(e.engine, f["engine"].StrOr("llama.cpp"));
  e.models = OneOrMany(f["model"]);
  if (e.models.empty()) return Fail(f.Err("model: required (a preset {preset: small} or a model file, or a list)"));
  for (const Field& p : OneOrMany(f["precision"])) {
    HONE_ASSIGN_OR_RETURN(std::string s, p.Str());
    e.precisions.push_back(s);
  }
  if (e.precisions.empty()) e.precisions.push_back("");
  e.workloads = OneOrMany(f["workload"]);
  for (const Field& w : e.workloads) {
    if (!w.is_map()) return Fail(w.Err("a workload is a map of session-spec workload fields (kind, isl, ...)"));
  }
  if (f["budget"].defined()) {
    HONE_ASSIGN_OR_RETURN(std::string b, f["budget"].Str());
    auto s = spec::ParseDurationSeconds(b);
    if (!s || *s <= 0) return Fail(f["budget"].Err("a duration such as 3m (got '" + b + "')"));
    e.budget_s = *s;
  }
  HONE_ASSIGN_OR_RETURN(int64_t gpus, f["gpus"].IntOr(e.resources.gpus, 0, 64));
  HONE_ASSIGN_OR_RETURN(int64_t cpus, f["cpus"].IntOr(e.resources.cpus, 1, 4096));
  e.resources.gpus = static_cast<int>(gpus);
  e.resources.cpus = static_cast<int>(cpus);
  if (f["mem"].defined()) {
    HONE_ASSIGN_OR_RETURN(e.resources.mem_mb, ParseMemMb(f["mem"]));
  }
  if (f["session"].defined()) HONE_TRY(f["session"].RequireMap());
  return e;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> FleetOverrides::ToPairs() const {
  std::vector<std::pair<std::string, std::string>> out;
  if (!executor.empty()) out.emplace_back("executor", executor);
  if (!partition.empty()) out.emplace_back("partition", partition);
  if (!kb.empty()) out.emplace_back("kb", kb);
  if (budget_s > 0) out.emplace_back("budget", Seconds(budget_s));
  if (!only.empty()) out.emplace_back("only", Join(only, ","));
  if (!hone.empty()) out.emplace_back("hone", hone);
  return out;
}

FleetOverrides FleetOverrides::FromPairs(const std::vector<std::pair<std::string, std::string>>& pairs) {
  FleetOverrides o;
  for (const auto& [k, v] : pairs) {
    if (k == "executor") o.executor = v;
    if (k == "partition") o.partition = v;
    if (k == "kb") o.kb = v;
    if (k == "budget") o.budget_s = spec::ParseDurationSeconds(v).value_or(0);
    if (k == "only") o.only = Split(v, ',');
    if (k == "hone") o.hone = v;
  }
  return o;
}

kb::Workload KbWorkload(const spec::SessionSpec& spec) {
  return kb::WorkloadOf(spec);
}

Result<FleetSpec> ParseFleetSpec(const std::string& text, const std::string& source,
                                 const std::vector<std::string>& known_metrics, const FleetOverrides& ov) {
  HONE_ASSIGN_OR_RETURN(Field root, Field::Parse(text, source));
  HONE_TRY(root.RequireMap());
  HONE_TRY(root.CheckKeys({"name", "output_dir", "executor", "kb", "retries", "resources", "defaults", "workloads"}));
  FleetSpec f;
  f.source = source;
  HONE_ASSIGN_OR_RETURN(f.name, root["name"].StrOr("fleet"));
  for (char c : f.name) {
    if (!IsNameChar(c)) return Fail(root["name"].Err("letters, digits, '-', '_' and '.' only (got '" + f.name + "')"));
  }
  HONE_ASSIGN_OR_RETURN(f.output_dir, root["output_dir"].StrOr(""));
  HONE_ASSIGN_OR_RETURN(f.executor, ParseExecutor(root["executor"]));
  HONE_ASSIGN_OR_RETURN(int64_t retries, root["retries"].IntOr(1, 0, 5));
  f.retries = static_cast<int>(retries);
  if (Field kb = root["kb"]; kb.defined()) {
    HONE_TRY(kb.RequireMap());
    HONE_TRY(kb.CheckKeys({"url", "path"}));
    HONE_ASSIGN_OR_RETURN(f.kb_url, kb["url"].StrOr(""));
    HONE_ASSIGN_OR_RETURN(f.kb_path, kb["path"].StrOr(""));
    if (!f.kb_url.empty() && !f.kb_url.starts_with("postgresql://") && !f.kb_url.starts_with("postgres://")) {
      return Fail(kb["url"].Err("must be a postgresql:// URL"));
    }
    if (!f.kb_url.empty() && !f.kb_path.empty()) return Fail(kb.Err("give either url or path, not both"));
  }
  // Command-line overrides.
  if (!ov.executor.empty()) {
    if (ov.executor != "local" && ov.executor != "slurm") {
      return InvalidArgument("--executor must be local or slurm (got '" + ov.executor + "')");
    }
    f.executor.kind = ov.executor;
  }
  if (!ov.partition.empty()) f.executor.partition = ov.partition;
  if (!ov.hone.empty()) f.executor.hone = ov.hone;
  if (!ov.kb.empty()) {
    bool url = ov.kb.find("://") != std::string::npos;
    if (url && !ov.kb.starts_with("postgresql://") && !ov.kb.starts_with("postgres://")) {
      return InvalidArgument("--kb must be a postgresql:// URL or a file path");
    }
    f.kb_url = url ? ov.kb : "";
    f.kb_path = url ? "" : ov.kb;
  }

  HONE_ASSIGN_OR_RETURN(JobResources base_resources, ParseResources(root["resources"], JobResources{}));
  Field defaults = root["defaults"];
  double default_budget_s = 600;
  if (defaults.defined()) {
    HONE_TRY(defaults.RequireMap());
    for (const char* owned : {"name", "output_dir"}) {
      if (defaults[owned].defined()) return Fail(defaults[owned].Err("set by the fleet for each session"));
    }
    for (const char* owned : {"url", "path"}) {
      if (defaults["kb"][owned].defined()) {
        return Fail(defaults["kb"][owned].Err("the fleet's knowledge base is the top-level kb: {url|path}"));
      }
    }
    if (defaults["budget"]["wall"].defined()) {
      HONE_ASSIGN_OR_RETURN(std::string b, defaults["budget"]["wall"].Str());
      if (auto s = spec::ParseDurationSeconds(b)) default_budget_s = *s;
    }
  }
  Field workloads = root["workloads"];
  if (!workloads.is_seq() || workloads.Items().empty()) {
    return Fail(workloads.defined() ? workloads.Err("a non-empty list of workload entries")
                                    : root.Err("workloads: required (a list of workload entries)"));
  }

  std::set<std::string> names;
  int entry_idx = 0;
  for (const Field& ef : workloads.Items()) {
    HONE_ASSIGN_OR_RETURN(Entry e, ParseEntry(ef, base_resources, default_budget_s));
    for (const Field& model : e.models) {
      for (const std::string& precision : e.precisions) {
        for (size_t wi = 0; wi < std::max<size_t>(1, e.workloads.size()); ++wi) {
          const Field* wl = e.workloads.empty() ? nullptr : &e.workloads[wi];
          FleetSession s;
          s.entry = entry_idx;
          s.engine = e.engine;
          s.precision = precision;
          s.budget_s = ov.budget_s > 0 ? ov.budget_s : e.budget_s;
          s.resources = e.resources;
          s.resources.time_limit_s = s.budget_s + f.executor.time_margin_s;
          auto built = TryCatch(ErrorCode::kInvalidArgument, "building a session spec", [&]() -> Status {
            YAML::Node doc = defaults.defined() ? YAML::Clone(defaults.node()) : YAML::Node(YAML::NodeType::Map);
            if (ef["session"].defined()) MergeInto(doc, ef["session"].node());
            s.model = Sanitize(ModelLabel(model.node()));
            std::string wl_label = "fixed";
            YAML::Node wnode(YAML::NodeType::Map);
            if (wl != nullptr) {
              wnode = YAML::Clone(wl->node());
              if (wnode["name"]) {
                wl_label = wnode["name"].as<std::string>();
                wnode.remove("name");
              } else if (wnode["kind"]) {
                wl_label = wnode["kind"].as<std::string>();
              }
            } else if (doc["workload"] && doc["workload"]["kind"]) {
              wl_label = doc["workload"]["kind"].as<std::string>();
            }
            s.workload = Sanitize(wl_label);
            s.name = (e.prefix.empty() ? "" : Sanitize(e.prefix) + "-") + s.model +
                     (precision.empty() ? "" : "-" + Sanitize(precision)) + "-" + s.workload;
            doc["name"] = s.name;
            doc["target"]["adapter"] = e.engine;
            doc["target"]["model"] = YAML::Clone(model.node());
            if (e.resources.gpus > 0) doc["target"]["num_gpus"] = e.resources.gpus;
            if (!precision.empty()) {
              // The precision is the stock's: the search keeps it (unless the entry
              // asks for weights explicitly in search.knobs).
              doc["target"]["base_config"]["weights"] = precision;
              bool searched = false;
              if (doc["search"] && doc["search"]["knobs"]) {
                for (const auto& k : doc["search"]["knobs"]) searched = searched || k.as<std::string>() == "weights";
              }
              if (!searched) {
                YAML::Node exclude = doc["search"]["exclude"];
                bool listed = false;
                for (const auto& k : exclude) listed = listed || k.as<std::string>() == "weights";
                if (!listed) doc["search"]["exclude"].push_back("weights");
              }
            }
            if (!doc["workload"] || !doc["workload"].IsMap()) doc["workload"] = YAML::Node(YAML::NodeType::Map);
            MergeInto(doc["workload"], wnode);
            doc["budget"]["wall"] = Seconds(s.budget_s);
            if (!f.kb_url.empty()) doc["kb"]["url"] = f.kb_url;
            if (!f.kb_path.empty()) doc["kb"]["path"] = f.kb_path;
            YAML::Emitter out;
            out << doc;
            s.spec_yaml = std::string(out.c_str()) + "\n";
            return Ok();
          });
          if (!built || !*built) {
            Error err = !built ? built.error() : built->error();
            return Fail(ef.Err(err.message));
          }
          if (!Selected(s.name, ov.only)) continue;
          if (!names.insert(s.name).second) {
            return Fail(ef.Err("two sessions are named '" + s.name +
                               "': give the entry (or its workloads) a distinct name"));
          }
          auto parsed = spec::ParseSessionSpec(s.spec_yaml, "session " + s.name, known_metrics);
          if (!parsed) return Fail(ef.Err(parsed.error().message));
          s.spec = std::move(*parsed);
          s.workload_kind = s.spec.workload.kind;
          s.identity = {.model = KbModelName(s.spec.target.model),
                        .hardware = "fleet",
                        .framework = s.engine,
                        .model_type = "llama",
                        .architecture = "LlamaForCausalLM",
                        .framework_version = "",
                        .precision = precision.empty() ? "native" : precision};
          s.kb_workload = KbWorkload(s.spec);
          f.sessions.push_back(std::move(s));
        }
      }
    }
    ++entry_idx;
  }
  if (f.sessions.empty()) return InvalidArgument(source + ": no session selected (--only matched none)");
  return f;
}

Result<FleetSpec> LoadFleetSpec(const std::string& path, const std::vector<std::string>& known_metrics,
                                const FleetOverrides& overrides) {
  HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(path));
  return ParseFleetSpec(text, path, known_metrics, overrides);
}

}  // namespace hone::fleet
