#include "kernel/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/stats.h"

namespace hone::kernel {

double RooflinePct(double bytes, double flops, double ms, const Ceilings& c) {
  if (!(ms > 0) || !(c.bw_gbps > 0) || !(c.bf16_tflops > 0)) return 0;
  const double t = ms * 1e-3;
  return 100.0 * std::max(bytes / t / (c.bw_gbps * 1e9), flops / t / (c.bf16_tflops * 1e12));
}

std::vector<TaskSummary> Summarize(const BenchResult& bench) {
  std::vector<TaskSummary> out;
  for (const TaskResult& t : bench.tasks) {
    TaskSummary ts;
    ts.result = &t;
    std::vector<CaseOutcome> outcomes;
    double w_sum = 0, roof_w = 0, roof_bw = 0, largest_bytes = -1, held_log = 0;
    int held_n = 0;
    for (const CaseResult& c : t.cases) {
      CaseSummary cs;
      cs.result = &c;
      std::vector<PairedRun> pairs;
      std::vector<double> base, cand;
      cs.checks_ok = !c.runs.empty();
      for (const CaseRun& r : c.runs) {
        cs.checks_ok = cs.checks_ok && r.candidate_check_ok && r.inputs_unmodified && r.candidate_graph_ok;
        if (!r.timed()) continue;
        pairs.push_back({r.baseline.median_ms, r.candidate.median_ms});
        base.push_back(r.baseline.median_ms);
        cand.push_back(r.candidate.median_ms);
      }
      cs.decision = DecideKeep(pairs, t.keep);
      if (!cs.checks_ok && !c.runs.empty()) {
        cs.decision.verdict = Verdict::kRevert;
        cs.decision.reason = "candidate failed a correctness, graph-replay or input check";
      }
      cs.baseline_ms = Median(base);
      cs.candidate_ms = Median(cand);
      cs.roofline_candidate_pct = RooflinePct(c.bytes, c.flops, cs.candidate_ms, bench.ceilings);
      cs.roofline_baseline_pct = RooflinePct(c.bytes, c.flops, cs.baseline_ms, bench.ceilings);
      if (cs.decision.speedup > 10) cs.flag = "speedup > 10x: check the harness before believing it";
      if (cs.roofline_candidate_pct > 100) cs.flag = "above 100% of the measured roofline";
      if (!cs.flag.empty() && cs.decision.verdict == Verdict::kKeep) {
        cs.decision.verdict = Verdict::kInconclusive;
        cs.decision.reason = "suspicious: " + cs.flag;
      }
      if (!pairs.empty()) {
        if (c.held_out) {
          held_log += std::log(cs.decision.speedup);
          ++held_n;
        } else {
          outcomes.push_back({c.weight, cs.decision.speedup});
          w_sum += c.weight;
          roof_w += c.weight * cs.roofline_candidate_pct;
          roof_bw += c.weight * cs.roofline_baseline_pct;
          if (c.bytes > largest_bytes) {
            largest_bytes = c.bytes;
            ts.roofline_largest_pct = cs.roofline_candidate_pct;
          }
          ts.kept += cs.decision.verdict == Verdict::kKeep;
        }
      }
      ts.cases.push_back(std::move(cs));
    }
    ts.family = DecideFamily(outcomes, t.keep);
    if (w_sum > 0) {
      ts.roofline_weighted_pct = roof_w / w_sum;
      ts.roofline_baseline_weighted_pct = roof_bw / w_sum;
    }
    ts.held_out_geomean = held_n ? std::exp(held_log / held_n) : 0;
    out.push_back(std::move(ts));
  }
  return out;
}

std::string FormatTable(const BenchResult& bench, const std::vector<TaskSummary>& tasks) {
  std::string s;
  char line[512];
  std::snprintf(line, sizeof line,
                "device %s (%d SMs), %s; ceilings measured in the same run: %.0f GB/s, %.0f TFLOP/s bf16\n",
                bench.device_name.c_str(), bench.sm_count, bench.compiler.c_str(), bench.ceilings.bw_gbps,
                bench.ceilings.bf16_tflops);
  s += line;
  for (const TaskSummary& ts : tasks) {
    std::snprintf(line, sizeof line, "\n%-28s %-15s %9s %9s %8s %17s %7s %7s %4s %5s  %s\n",
                  ts.result->task_id.c_str(), "baseline", "base us", "cand us", "speedup", "[lo, hi] bound",
                  "roof%c", "roof%b", "regs", "spill", "verdict");
    s += line;
    for (const CaseSummary& cs : ts.cases) {
      const CaseResult& c = *cs.result;
      std::string id = c.case_id + (c.held_out ? "*" : "");
      std::snprintf(line, sizeof line, "  %-26s %-15s %9.2f %9.2f %8.3f [%6.3f, %6.3f] %7.1f %7.1f %4d %5d  %s%s%s\n",
                    id.c_str(), c.baseline.c_str(), cs.baseline_ms * 1e3, cs.candidate_ms * 1e3,
                    cs.decision.speedup, cs.decision.lo, cs.decision.hi, cs.roofline_candidate_pct,
                    cs.roofline_baseline_pct, c.regs, c.spill_stores,
                    std::string(VerdictName(cs.decision.verdict)).c_str(), cs.flag.empty() ? "" : " !",
                    cs.flag.c_str());
      s += line;
    }
    std::snprintf(line, sizeof line,
                  "  => geomean x%.3f, weighted x%.3f, worst x%.3f; roofline %.1f%% weighted (baseline %.1f%%), "
                  "%.1f%% on the largest case; held-out geomean %s; %d case(s) KEEP; family %s (%s)\n",
                  ts.family.geomean, ts.family.weighted, ts.family.worst, ts.roofline_weighted_pct,
                  ts.roofline_baseline_weighted_pct, ts.roofline_largest_pct,
                  ts.held_out_geomean > 0 ? ("x" + std::to_string(ts.held_out_geomean).substr(0, 5)).c_str() : "-",
                  ts.kept, ts.family.accepted ? "ACCEPTED" : "NOT accepted", ts.family.reason.c_str());
    s += line;
  }
  s += "\n(* held out: not tuned on, config from the nearest tuned shape; roof% = % of the measured roofline, "
       "c = candidate, b = baseline)\n";
  return s;
}

}  // namespace hone::kernel
