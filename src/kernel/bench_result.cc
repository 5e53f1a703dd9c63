#include "kernel/bench_result.h"

#include <nlohmann/json.hpp>

namespace hone::kernel {

namespace {

using json = nlohmann::json;

TimingStats Stats(const json& j) {
  TimingStats s;
  if (!j.is_object()) return s;
  s.median_ms = j.value("median", 0.0);
  s.p20_ms = j.value("p20", 0.0);
  s.p80_ms = j.value("p80", 0.0);
  s.n = j.value("n", 0);
  return s;
}

bool CheckOk(const json& j, const char* key) {
  return j.contains(key) && j[key].is_object() && j[key].value("status", "") == "ok";
}

CaseRun ParseRun(const json& j) {
  CaseRun r;
  r.error = j.value("error", "");
  r.baseline = Stats(j.value("baseline_ms", json()));
  r.candidate = Stats(j.value("candidate_ms", json()));
  r.candidate_check_ok = CheckOk(j, "candidate_check");
  r.baseline_check_ok = CheckOk(j, "baseline_check");
  r.inputs_unmodified = j.contains("candidate_check") && j["candidate_check"].value("inputs_unmodified", false);
  r.candidate_graph_ok = j.value("candidate_graph_ok", false);
  r.baseline_graph_ok = j.value("baseline_graph_ok", false);
  if (r.error.empty() && !(r.baseline.median_ms > 0 && r.candidate.median_ms > 0)) r.error = "no timing";
  return r;
}

Result<CaseResult> ParseCase(const json& j, const std::string& where) {
  CaseResult c;
  c.case_id = j.value("case_id", "");
  if (c.case_id.empty()) return InvalidArgument(where + ": missing case_id");
  c.held_out = j.value("held_out", false);
  c.weight = j.value("weight", 1.0);
  if (j.contains("dims") && j["dims"].is_object()) {
    for (auto it = j["dims"].begin(); it != j["dims"].end(); ++it) c.dims[it.key()] = it->get<int64_t>();
  }
  if (j.contains("params") && j["params"].is_object()) {
    for (auto it = j["params"].begin(); it != j["params"].end(); ++it) {
      c.params[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
    }
  }
  c.bytes = j.value("bytes", 0.0);
  c.flops = j.value("flops", 0.0);
  if (!(c.bytes > 0)) return InvalidArgument(where + ": bytes must be > 0");
  const json cand = j.value("candidate", json::object());
  c.config.index = cand.value("config", -1);
  c.config.name = cand.value("name", "");
  c.config.num_splits = cand.value("num_splits", 1);
  c.regs = cand.value("regs", 0);
  c.local_bytes = cand.value("local_bytes", 0);
  if (cand.contains("ptxas") && cand["ptxas"].is_object()) c.spill_stores = cand["ptxas"].value("spill_stores", 0);
  c.baseline = j.value("baseline", "");
  if (j.contains("claimed_speedup") && j["claimed_speedup"].is_number()) c.claimed_speedup = j["claimed_speedup"].get<double>();
  if (j.contains("nearest_case") && j["nearest_case"].is_string()) c.nearest_case = j["nearest_case"].get<std::string>();
  if (j.contains("runs") && j["runs"].is_array()) {
    for (const json& r : j["runs"]) c.runs.push_back(ParseRun(r));
  }
  return c;
}

}  // namespace

Result<BenchResult> ParseBenchResult(const std::string& text, const std::string& source_name) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument(source_name + ": not a JSON object");
  if (j.value("schema", "") != "hone.kernel.bench/v1") {
    return InvalidArgument(source_name + ": unsupported schema '" + j.value("schema", "") +
                           "' (expected hone.kernel.bench/v1)");
  }
  // nlohmann's get<T>() throws on a wrong type; that becomes one error naming the file.
  auto parsed = TryCatch(ErrorCode::kInvalidArgument, source_name, [&]() -> Result<BenchResult> {
    BenchResult b;
    const json dev = j.value("device", json::object());
    b.device_name = dev.value("name", "");
    b.sm_count = dev.value("sm_count", 0);
    b.l2_bytes = dev.value("l2_bytes", int64_t{0});
    b.torch_version = dev.value("torch", "");
    b.compiler = j.value("compiler", "");
    const json ceil = j.value("ceilings", json::object());
    b.ceilings.bw_gbps = ceil.value("bw_gbps", 0.0);
    b.ceilings.copy_torch_gbps = ceil.value("copy_torch_gbps", 0.0);
    b.ceilings.copy_kernel_gbps = ceil.value("copy_kernel_gbps", 0.0);
    b.ceilings.read_kernel_gbps = ceil.value("read_kernel_gbps", 0.0);
    b.ceilings.bf16_tflops = ceil.value("bf16_matmul_tflops", 0.0);
    b.ceilings.method = ceil.value("method", "");
    if (!(b.ceilings.bw_gbps > 0) || !(b.ceilings.bf16_tflops > 0)) {
      return InvalidArgument(source_name + ": ceilings.bw_gbps and ceilings.bf16_matmul_tflops must be measured (> 0)");
    }
    const json timing = j.value("timing", json::object());
    b.runs = timing.value("runs", 0);
    b.timing_method = timing.value("method", "");
    for (const json& tj : j.value("tasks", json::array())) {
      TaskResult t;
      t.task_id = tj.value("task_id", "");
      t.op = tj.value("op", "");
      t.spec_sha256 = tj.value("spec_sha256", "");
      t.weights_source = tj.value("weights_source", "");
      const json keep = tj.value("keep", json::object());
      t.keep.min_improve = keep.value("min_improve", t.keep.min_improve);
      t.keep.confidence = keep.value("confidence", t.keep.confidence);
      t.keep.max_case_regression = keep.value("max_case_regression", t.keep.max_case_regression);
      for (const json& cj : tj.value("cases", json::array())) {
        HONE_ASSIGN_OR_RETURN(CaseResult c, ParseCase(cj, source_name + ": " + t.task_id));
        t.cases.push_back(std::move(c));
      }
      b.tasks.push_back(std::move(t));
    }
    return b;
  });
  if (!parsed) return Fail(std::move(parsed).error());
  return std::move(*parsed);
}

}  // namespace hone::kernel
