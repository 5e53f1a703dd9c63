// The keep/revert rule: a verdict from paired, interleaved trials.
//
// Baseline (A) and candidate (B) run alternately, A B A B ..., so each pair shares the
// machine's state at its moment; the ratio B/A per pair removes most of the drift that
// makes single-run comparisons unreliable (16-58% in the anchors' data). The verdict:
//   gain      = the paired ratio of sums minus 1 (direction-adjusted: for a metric to
//               minimize the ratio is A/B),
//   interval  = the more conservative of (a) a percentile bootstrap of the paired
//               ratio and (b) a Student-t interval on the per-pair log ratios; with
//               few pairs the bootstrap alone is too narrow (it cannot see beyond the
//               observed extremes), so the t-interval guards it,
//   threshold = max(min_gain, noise floor), the noise floor being the offset an A/A
//               comparison (the stock config against itself) showed in the prelude,
//   KEEP         when the interval's lower end is above 1 and gain >= threshold,
//   REVERT       when the interval's upper end is below 1 + threshold (a meaningful
//                gain is implausible),
//   INCONCLUSIVE otherwise: the caller adds pairs up to its maximum, then drops it.
// Adding pairs while inconclusive is sequential testing; the per-look confidence is
// corrected for the planned number of looks (Bonferroni). This is the statistics
// only: what may still turn a KEEP down (SLO, accuracy, critic, ...) is decided in
// one place, session/comparison.h's Decide().
#pragma once

#include <string>
#include <vector>

#include "core/stats.h"
#include "core/verdict.h"

namespace hone::measure {

struct VerdictInput {
  std::vector<double> a;  // baseline objective values, pair by pair
  std::vector<double> b;  // candidate
  bool maximize = true;
  double min_gain = 0.01;
  double noise_floor = 0;
  double confidence = 0.95;
  // Interim looks planned (pairs are added while inconclusive). Each look uses a
  // Bonferroni-corrected confidence, 1 - (1 - confidence)/looks, so peeking after
  // every pair does not inflate the false-keep rate.
  int looks = 1;
  uint64_t seed = 1;
};

struct VerdictResult {
  Verdict verdict = Verdict::kInconclusive;  // KEEP, REVERT or INCONCLUSIVE
  double gain = 0;  // relative, direction-adjusted (0.05 = 5% better)
  Interval ratio;   // the interval used (direction-adjusted ratio)
  Interval bootstrap;
  Interval t_interval;
  double threshold = 0;
  int pairs = 0;
  std::string reason;
};

VerdictResult Judge(const VerdictInput& in);

// The noise floor from A/A pairs (first vs second measurement of the same config):
// the median over pairs of |ratio - 1|.
double NoiseFloor(const std::vector<double>& a1, const std::vector<double>& a2);

// Student-t quantile (two-sided `confidence`) for `dof` degrees of freedom.
double StudentT(double confidence, int dof);

}  // namespace hone::measure
