#include "kernel/task_spec.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/strings.h"
#include "spec/yaml.h"
#include "sys/files.h"

namespace hone::kernel {

namespace {

using spec::Field;

Result<std::vector<std::string>> OptStrList(const Field& f) {
  if (!f.defined()) return std::vector<std::string>{};
  return f.StrList();
}

Result<OpInfo> ParseOp(const std::string& name, const Field& f) {
  HONE_TRY(f.RequireMap());
  HONE_TRY(f.CheckKeys({"description", "dims", "params", "dtype", "key_dims", "key_params", "batch_dims"}));
  OpInfo op;
  op.name = name;
  HONE_ASSIGN_OR_RETURN(op.description, f["description"].StrOr(""));
  HONE_ASSIGN_OR_RETURN(op.dims, f["dims"].StrList());
  if (op.dims.empty()) return Fail(f["dims"].Err("an op needs at least one dim"));
  for (const auto& [pname, pf] : f["params"].Entries()) {
    std::vector<std::string> allowed;
    if (pf.is_seq()) {
      HONE_ASSIGN_OR_RETURN(allowed, pf.StrList());
    } else {
      HONE_ASSIGN_OR_RETURN(std::string kind, pf.Str());
      if (kind != "number") return Fail(pf.Err("a param is a list of allowed values or 'number'"));
    }
    op.params[pname] = std::move(allowed);
  }
  HONE_ASSIGN_OR_RETURN(op.dtype, f["dtype"].Str());
  HONE_ASSIGN_OR_RETURN(op.key_dims, OptStrList(f["key_dims"]));
  HONE_ASSIGN_OR_RETURN(op.key_params, OptStrList(f["key_params"]));
  HONE_ASSIGN_OR_RETURN(op.batch_dims, OptStrList(f["batch_dims"]));
  auto known_dim = [&](const std::string& d) { return std::find(op.dims.begin(), op.dims.end(), d) != op.dims.end(); };
  for (const auto& d : op.key_dims) {
    if (!known_dim(d)) return Fail(f["key_dims"].Err("'" + d + "' is not one of the op's dims"));
  }
  for (const auto& d : op.batch_dims) {
    if (!known_dim(d)) return Fail(f["batch_dims"].Err("'" + d + "' is not one of the op's dims"));
  }
  for (const auto& p : op.key_params) {
    if (!op.params.contains(p)) return Fail(f["key_params"].Err("'" + p + "' is not one of the op's params"));
  }
  return op;
}

Result<Tolerance> ParseTolerance(const Field& f) {
  HONE_TRY(f.RequireMap());
  HONE_TRY(f.CheckKeys({"atol", "rtol", "min_snr_db"}));
  Tolerance t;
  if (f["atol"].defined()) { HONE_ASSIGN_OR_RETURN(t.atol, f["atol"].Double(0, 1e6)); }
  if (f["rtol"].defined()) { HONE_ASSIGN_OR_RETURN(t.rtol, f["rtol"].Double(0, 1e6)); }
  if (f["min_snr_db"].defined()) { HONE_ASSIGN_OR_RETURN(t.min_snr_db, f["min_snr_db"].Double(0, 200)); }
  if (!t.atol && !t.rtol && !t.min_snr_db) return Fail(f.Err("a tolerance needs atol, rtol or min_snr_db"));
  return t;
}

Result<KernelCase> ParseCase(const Field& f, const OpInfo& op, bool held_out) {
  HONE_TRY(f.RequireMap());
  HONE_TRY(f.CheckKeys({"id", "weight", "dims", "params"}));
  KernelCase c;
  c.held_out = held_out;
  HONE_ASSIGN_OR_RETURN(c.id, f["id"].Str());
  if (c.id.empty() || c.id.find_first_of(" ,/=\t") != std::string::npos) {
    return Fail(f["id"].Err("a case id is a non-empty word without spaces, ',', '/' or '='"));
  }
  HONE_ASSIGN_OR_RETURN(c.weight, f["weight"].DoubleOr(1.0, 0.0, 1e12));
  if (!held_out && !(c.weight > 0)) return Fail(f["weight"].Err("a tuned case needs a weight > 0"));
  Field dims = f["dims"];
  HONE_TRY(dims.RequireMap());
  for (const auto& [name, df] : dims.Entries()) {
    if (std::find(op.dims.begin(), op.dims.end(), name) == op.dims.end()) {
      return Fail(df.Err("op " + op.name + " has no dim '" + name + "' (dims: " + Join(op.dims, ", ") + ")"));
    }
    HONE_ASSIGN_OR_RETURN(c.dims[name], df.Int(1, int64_t{1} << 40));
  }
  for (const auto& d : op.dims) {
    if (!c.dims.contains(d)) return Fail(dims.Err("missing dim '" + d + "' (op " + op.name + " needs " + Join(op.dims, ", ") + ")"));
  }
  for (const auto& [name, pf] : f["params"].Entries()) {
    auto it = op.params.find(name);
    if (it == op.params.end()) return Fail(pf.Err("op " + op.name + " has no param '" + name + "'"));
    HONE_ASSIGN_OR_RETURN(std::string value, pf.Str());
    if (it->second.empty()) {
      if (!ParseDouble(value)) return Fail(pf.Err("expected a number (got '" + value + "')"));
    } else if (std::find(it->second.begin(), it->second.end(), value) == it->second.end()) {
      return Fail(pf.Err("must be one of " + Join(it->second, ", ") + " (got '" + value + "')"));
    }
    c.params[name] = value;
  }
  for (const auto& p : op.key_params) {
    if (!c.params.contains(p)) return Fail(f.Err("missing param '" + p + "' (it keys the tuned table)"));
  }
  return c;
}

}  // namespace

Result<OpCatalog> OpCatalog::Parse(const std::string& text, const std::string& source_name) {
  HONE_ASSIGN_OR_RETURN(Field root, Field::Parse(text, source_name));
  HONE_TRY(root.RequireMap());
  HONE_TRY(root.CheckKeys({"ops", "production_baselines"}));
  OpCatalog cat;
  HONE_ASSIGN_OR_RETURN(cat.baselines_, root["production_baselines"].StrList());
  HONE_TRY(root["ops"].RequireMap());
  for (const auto& [name, f] : root["ops"].Entries()) {
    HONE_ASSIGN_OR_RETURN(OpInfo op, ParseOp(name, f));
    cat.ops_[name] = std::move(op);
  }
  if (cat.ops_.empty()) return Fail(root["ops"].Err("no ops defined"));
  return cat;
}

Result<OpCatalog> OpCatalog::Load(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(path));
  return Parse(text, path);
}

const OpInfo* OpCatalog::Find(const std::string& op) const {
  auto it = ops_.find(op);
  return it == ops_.end() ? nullptr : &it->second;
}

bool OpCatalog::IsProductionBaseline(const std::string& impl) const {
  return std::find(baselines_.begin(), baselines_.end(), impl) != baselines_.end();
}

std::vector<std::string> OpCatalog::OpNames() const {
  std::vector<std::string> out;
  for (const auto& [name, op] : ops_) out.push_back(name);
  return out;
}

double KernelTaskSpec::TotalWeight() const {
  double w = 0;
  for (const auto& c : cases) w += c.weight;
  return w;
}

Result<KernelTaskSpec> ParseTaskSpec(const std::string& text, const std::string& source_name,
                                     const OpCatalog& catalog) {
  HONE_ASSIGN_OR_RETURN(Field root, Field::Parse(text, source_name));
  HONE_TRY(root.RequireMap());
  HONE_TRY(root.CheckKeys({"task_id", "op", "baseline", "reference", "tolerances", "constraints", "timing", "keep",
                           "budget", "weights_source", "cases", "held_out_cases"}));
  KernelTaskSpec t;
  t.source_path = source_name;
  t.sha256 = sys::Sha256Hex(text);
  HONE_ASSIGN_OR_RETURN(t.task_id, root["task_id"].Str());
  HONE_ASSIGN_OR_RETURN(t.op, root["op"].Str());
  const OpInfo* op = catalog.Find(t.op);
  if (op == nullptr) {
    return Fail(root["op"].Err("unknown op '" + t.op + "' (known: " + Join(catalog.OpNames(), ", ") + ")"));
  }

  Field baseline = root["baseline"];
  HONE_TRY(baseline.RequireMap());
  HONE_TRY(baseline.CheckKeys({"impl"}));
  HONE_ASSIGN_OR_RETURN(t.baseline_impls, baseline["impl"].StrList());
  if (t.baseline_impls.empty()) return Fail(baseline["impl"].Err("name at least one production baseline"));
  for (const auto& impl : t.baseline_impls) {
    if (!catalog.IsProductionBaseline(impl)) {
      return Fail(baseline["impl"].Err("'" + impl + "' is not a production implementation (a baseline must be one of: " +
                                       Join(catalog.production_baselines(), ", ") + ")"));
    }
  }
  HONE_ASSIGN_OR_RETURN(t.reference, root["reference"].Str());

  Field tols = root["tolerances"];
  HONE_TRY(tols.RequireMap());
  for (const auto& [dtype, tf] : tols.Entries()) {
    HONE_ASSIGN_OR_RETURN(t.tolerances[dtype], ParseTolerance(tf));
  }
  if (t.tolerances.empty()) return Fail(tols.Err("give a tolerance for at least one dtype"));

  if (Field c = root["constraints"]; c.defined()) {
    HONE_TRY(c.CheckKeys({"graph_capturable", "no_host_sync"}));
    HONE_ASSIGN_OR_RETURN(t.graph_capturable, c["graph_capturable"].BoolOr(true));
    HONE_ASSIGN_OR_RETURN(t.no_host_sync, c["no_host_sync"].BoolOr(true));
  }
  if (Field f = root["timing"]; f.defined()) {
    HONE_TRY(f.CheckKeys({"l2_state", "target_graph_ms", "replays", "rounds", "runs"}));
    HONE_ASSIGN_OR_RETURN(t.timing.l2_state, f["l2_state"].StrOr("cold"));
    if (t.timing.l2_state != "cold" && t.timing.l2_state != "warm") {
      return Fail(f["l2_state"].Err("must be cold or warm"));
    }
    HONE_ASSIGN_OR_RETURN(t.timing.target_graph_ms, f["target_graph_ms"].DoubleOr(1.0, 0.01, 100));
    HONE_ASSIGN_OR_RETURN(int64_t replays, f["replays"].IntOr(20, 5, 10000));
    HONE_ASSIGN_OR_RETURN(int64_t rounds, f["rounds"].IntOr(4, 2, 100));
    HONE_ASSIGN_OR_RETURN(int64_t runs, f["runs"].IntOr(3, 3, 100));
    t.timing.replays = static_cast<int>(replays);
    t.timing.rounds = static_cast<int>(rounds);
    t.timing.runs = static_cast<int>(runs);
  }
  if (Field f = root["keep"]; f.defined()) {
    HONE_TRY(f.CheckKeys({"min_improve", "confidence", "max_case_regression"}));
    HONE_ASSIGN_OR_RETURN(t.keep.min_improve, f["min_improve"].DoubleOr(0.02, 0.0, 0.99));
    HONE_ASSIGN_OR_RETURN(t.keep.confidence, f["confidence"].DoubleOr(0.95, 0.5, 0.999));
    HONE_ASSIGN_OR_RETURN(t.keep.max_case_regression, f["max_case_regression"].DoubleOr(0.02, 0.0, 0.99));
  }
  if (Field f = root["budget"]; f.defined()) {
    HONE_TRY(f.CheckKeys({"max_configs_per_case", "wall_s"}));
    HONE_ASSIGN_OR_RETURN(int64_t n, f["max_configs_per_case"].IntOr(64, 1, 100000));
    t.budget.max_configs_per_case = static_cast<int>(n);
    HONE_ASSIGN_OR_RETURN(t.budget.wall_s, f["wall_s"].DoubleOr(180, 1, 7 * 86400));
  }
  HONE_ASSIGN_OR_RETURN(t.weights_source, root["weights_source"].StrOr("assumed"));
  if (t.weights_source != "assumed" && !t.weights_source.starts_with("trace:")) {
    return Fail(root["weights_source"].Err("must be 'assumed' or 'trace:<file>'"));
  }

  std::set<std::string> ids;
  auto add_cases = [&](const Field& list, bool held_out, std::vector<KernelCase>* out) -> Status {
    for (const Field& cf : list.Items()) {
      HONE_ASSIGN_OR_RETURN(KernelCase c, ParseCase(cf, *op, held_out));
      if (!ids.insert(c.id).second) return Fail(cf["id"].Err("duplicate case id '" + c.id + "'"));
      out->push_back(std::move(c));
    }
    return Ok();
  };
  if (!root["cases"].is_seq() || root["cases"].Items().empty()) {
    return Fail(root["cases"].Err("a task needs at least one case"));
  }
  HONE_TRY(add_cases(root["cases"], false, &t.cases));
  if (root["held_out_cases"].defined()) {
    if (!root["held_out_cases"].is_seq()) return Fail(root["held_out_cases"].Err("expected a list of cases"));
    HONE_TRY(add_cases(root["held_out_cases"], true, &t.held_out_cases));
  }
  return t;
}

Result<KernelTaskSpec> LoadTaskSpec(const std::string& path, const OpCatalog& catalog) {
  HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(path));
  return ParseTaskSpec(text, path, catalog);
}

}  // namespace hone::kernel
