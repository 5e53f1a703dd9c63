// Decisions and the per-family table, computed from a harness measurement.
//
// For every case: the paired keep decision over its runs (keep_rule.h), the median
// baseline and candidate times, and % of the measured roofline for both
// (max(bytes/t / bandwidth ceiling, flops/t / bf16 matmul ceiling), closed-form bytes and
// FLOPs). A case whose candidate failed any check in any run is REVERT whatever its
// speed. Suspicious numbers are flagged, never silently kept: a speedup over 10x or a
// roofline over 100% of the measured ceiling. For every task: the family decision over
// its tuned cases (geomean, workload-weighted speedup), the workload-weighted roofline %
// and the held-out geomean (generalization). FormatTable prints what the device run
// printed, recomputed here. Pure functions over BenchResult; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "kernel/bench_result.h"
#include "kernel/keep_rule.h"

namespace hone::kernel {

struct CaseSummary {
  const CaseResult* result = nullptr;
  KeepDecision decision;
  double baseline_ms = 0;   // median over runs of the per-run medians
  double candidate_ms = 0;
  double roofline_candidate_pct = 0;
  double roofline_baseline_pct = 0;
  bool checks_ok = false;
  std::string flag;  // "" or why the numbers are suspicious
};

struct TaskSummary {
  const TaskResult* result = nullptr;
  std::vector<CaseSummary> cases;
  FamilyDecision family;
  double roofline_weighted_pct = 0;           // candidate, workload-weighted over tuned cases
  double roofline_baseline_weighted_pct = 0;
  double roofline_largest_pct = 0;            // candidate on the case that moves the most bytes
  double held_out_geomean = 0;                // 0 when no held-out case was measured
  int kept = 0;                               // tuned cases with verdict KEEP
};

double RooflinePct(double bytes, double flops, double ms, const Ceilings& c);
std::vector<TaskSummary> Summarize(const BenchResult& bench);
std::string FormatTable(const BenchResult& bench, const std::vector<TaskSummary>& tasks);

}  // namespace hone::kernel
