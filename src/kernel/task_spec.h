// Kernel task specs: what one kernel-optimization task asks for, typed and validated.
//
// A task (data/kernel/<task>.yaml) names an op from the op catalogue
// (data/kernel/ops.yaml), the production baseline(s) a candidate must beat (never a
// naive implementation: only names the catalogue lists as production are accepted),
// the correctness reference, tolerances per dtype (atol/rtol and an SNR floor for low
// precision), constraints (graph-capturable, no host sync), the timing protocol, the
// keep rule's floor, a budget, and weighted cases (weights = calls x time from a trace)
// plus held-out cases that are never tuned on. A spec is immutable once baselined: its
// SHA-256 travels with every package and result, and verification refuses results
// measured against a different spec.
//
// Plain value types; LoadTaskSpec/ParseTaskSpec never throw and report every problem as
// "file:line:col: field: cause". Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace hone::kernel {

// One op of the catalogue.
struct OpInfo {
  std::string name;
  std::string description;
  std::vector<std::string> dims;  // every case gives exactly these
  // Allowed params: a list of allowed values, or empty for "any number".
  std::map<std::string, std::vector<std::string>> params;
  std::string dtype;                    // tag used in tuned-config file names
  std::vector<std::string> key_dims;    // tuned-table file key (vLLM's E, N)
  std::vector<std::string> key_params;  // params that also key the file
  std::vector<std::string> batch_dims;  // inner key of a tuned table (vLLM's M)
};

class OpCatalog {
 public:
  // Loads data/kernel/ops.yaml (ops + the production baseline names).
  static Result<OpCatalog> Load(const std::string& path);
  static Result<OpCatalog> Parse(const std::string& text, const std::string& source_name);

  const OpInfo* Find(const std::string& op) const;
  bool IsProductionBaseline(const std::string& impl) const;
  const std::vector<std::string>& production_baselines() const { return baselines_; }
  std::vector<std::string> OpNames() const;

 private:
  std::map<std::string, OpInfo> ops_;
  std::vector<std::string> baselines_;
};

struct Tolerance {
  std::optional<double> atol;
  std::optional<double> rtol;
  std::optional<double> min_snr_db;
};

struct TimingSpec {
  std::string l2_state = "cold";  // cold | warm
  double target_graph_ms = 1.0;   // CUDA-graph replay length
  int replays = 20;               // replays per round
  int rounds = 4;                 // baseline/candidate interleaved rounds per run
  int runs = 3;                   // independent fresh-process runs (>= 3)
};

struct KeepSpec {
  double min_improve = 0.02;          // floor: speedup must reach 1 + min_improve
  double confidence = 0.95;           // one-sided confidence of the paired test
  double max_case_regression = 0.02;  // a family is refused if a case is slower than 1 - this
};

struct BudgetSpec {
  int max_configs_per_case = 64;
  double wall_s = 180;
};

struct KernelCase {
  std::string id;
  double weight = 1.0;  // calls x time share (trace-derived or assumed; see weights_source)
  std::map<std::string, int64_t> dims;
  std::map<std::string, std::string> params;  // values kept as written ("per_token", "1e-6")
  bool held_out = false;
};

struct KernelTaskSpec {
  std::string task_id;
  std::string op;
  std::vector<std::string> baseline_impls;  // production paths; the fastest correct one is the baseline
  std::string reference;
  std::map<std::string, Tolerance> tolerances;  // by dtype: bf16, fp8_e4m3, ...
  bool graph_capturable = true;
  bool no_host_sync = true;
  TimingSpec timing;
  KeepSpec keep;
  BudgetSpec budget;
  std::string weights_source;  // "trace:<file>" or "assumed"
  std::vector<KernelCase> cases;
  std::vector<KernelCase> held_out_cases;
  std::string source_path;
  std::string sha256;  // of the spec file's bytes

  // Cases that are tuned on (not held out), and their weight sum.
  double TotalWeight() const;
};

Result<KernelTaskSpec> ParseTaskSpec(const std::string& text, const std::string& source_name,
                                     const OpCatalog& catalog);
Result<KernelTaskSpec> LoadTaskSpec(const std::string& path, const OpCatalog& catalog);

}  // namespace hone::kernel
