// The keep rule for kernel candidates: a paired test with a floor.
//
// Input: n independent measurement runs (fresh processes), each giving the baseline's
// and the candidate's median time measured interleaved in that run, so a pair shares
// the machine's state. The statistic is the per-run log speedup r_i = ln(b_i / c_i);
// with its mean m and sample standard deviation s, the one-sided Student-t bound at the
// spec's confidence gives [lo, hi] = exp(m -/+ t(n-1) s / sqrt(n)).
//   KEEP         lo > 1 (significantly faster) and exp(m) >= 1 + min_improve (the floor)
//   REVERT       hi < 1 (significantly slower), or the candidate failed a check
//   INCONCLUSIVE otherwise: too few runs, not significant, or faster but under the floor.
// A family (one task) is accepted when its workload-weighted speedup clears the floor
// and no tuned case is slower than 1 - max_case_regression. Pure functions; the
// statistics come from core/stats.h.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/verdict.h"
#include "kernel/task_spec.h"

namespace hone::kernel {

struct PairedRun {
  double baseline_ms = 0;
  double candidate_ms = 0;
};

struct KeepDecision {
  Verdict verdict = Verdict::kInconclusive;  // KEEP, REVERT or INCONCLUSIVE
  double speedup = 0;  // geometric mean over runs of baseline/candidate
  double lo = 0;       // one-sided lower confidence bound of the speedup
  double hi = 0;       // one-sided upper confidence bound
  int runs = 0;
  std::string reason;
};

// One-sided Student-t quantile t_{confidence}(df); df >= 1, confidence in [0.5, 0.999].
double StudentTQuantile(double confidence, int df);

KeepDecision DecideKeep(std::span<const PairedRun> runs, const KeepSpec& keep);

struct CaseOutcome {
  double weight = 0;
  double speedup = 0;
};

struct FamilyDecision {
  bool accepted = false;
  double geomean = 0;
  double weighted = 0;  // sum(w) / sum(w / s): time-weighted speedup
  double worst = 0;
  std::string reason;
};

// Over the tuned (not held-out) cases of one task.
FamilyDecision DecideFamily(std::span<const CaseOutcome> cases, const KeepSpec& keep);

}  // namespace hone::kernel
