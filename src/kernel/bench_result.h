// The raw numbers of one harness measurement (schema hone.kernel.bench/v1), typed.
//
// kernels/bench/kbench.py verify writes this file on the device: the device and
// compiler, the ceilings measured in the same run (DRAM bandwidth, bf16 matmul rate),
// and per task and case the candidate config with its compiler resource use, the
// closed-form bytes/FLOPs, and for each independent run the baseline's and candidate's
// median/p20/p80 per-call times plus the correctness, graph-replay and input checks.
// ParseBenchResult reads it; Summarize (summary.h) turns it into decisions. Plain values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernel/protocol.h"
#include "kernel/task_spec.h"

namespace hone::kernel {

struct Ceilings {
  double bw_gbps = 0;  // the bandwidth ceiling used for roofline %
  double copy_torch_gbps = 0;
  double copy_kernel_gbps = 0;
  double read_kernel_gbps = 0;
  double bf16_tflops = 0;
  std::string method;
};

struct TimingStats {
  double median_ms = 0;
  double p20_ms = 0;
  double p80_ms = 0;
  int n = 0;
};

struct CaseRun {
  std::string error;  // non-empty: this run produced no timing for the case
  TimingStats baseline;
  TimingStats candidate;
  bool candidate_check_ok = false;  // fresh inputs, poisoned outputs, tolerance
  bool baseline_check_ok = false;
  bool inputs_unmodified = false;
  bool candidate_graph_ok = false;  // the replayed graph itself recomputed the output
  bool baseline_graph_ok = false;
  bool timed() const { return error.empty() && baseline.median_ms > 0 && candidate.median_ms > 0; }
};

struct CaseResult {
  std::string case_id;
  bool held_out = false;
  double weight = 1;
  std::map<std::string, int64_t> dims;
  std::map<std::string, std::string> params;
  double bytes = 0;
  double flops = 0;
  KernelConfigRef config;
  int regs = 0;
  int local_bytes = 0;   // stack + spills per thread (cudaFuncGetAttributes)
  int spill_stores = 0;  // ptxas
  std::string baseline;
  double claimed_speedup = 0;  // 0 when the case was not claimed (held-out)
  std::string nearest_case;    // held-out: the tuned case whose config it reuses
  std::vector<CaseRun> runs;
};

struct TaskResult {
  std::string task_id;
  std::string op;
  std::string spec_sha256;
  KeepSpec keep;
  std::string weights_source;
  std::vector<CaseResult> cases;
};

struct BenchResult {
  std::string device_name;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  std::string compiler;
  std::string torch_version;
  Ceilings ceilings;
  int runs = 0;
  std::string timing_method;
  std::vector<TaskResult> tasks;
};

Result<BenchResult> ParseBenchResult(const std::string& text, const std::string& source_name);

}  // namespace hone::kernel
