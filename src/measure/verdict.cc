#include "measure/verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "core/check.h"

namespace hone::measure {

double StudentT(double confidence, int dof) {
  // Two-sided quantiles for the usual levels, interpolated on 1/dof; accurate to
  // ~1% for the pair counts hone uses (2..200).
  struct Row {
    int dof;
    double q90, q95, q99;
  };
  static const Row kTable[] = {{1, 6.314, 12.706, 63.657}, {2, 2.920, 4.303, 9.925}, {3, 2.353, 3.182, 5.841},
                               {4, 2.132, 2.776, 4.604},   {5, 2.015, 2.571, 4.032}, {6, 1.943, 2.447, 3.707},
                               {7, 1.895, 2.365, 3.499},   {8, 1.860, 2.306, 3.355}, {9, 1.833, 2.262, 3.250},
                               {10, 1.812, 2.228, 3.169},  {15, 1.753, 2.131, 2.947}, {20, 1.725, 2.086, 2.845},
                               {30, 1.697, 2.042, 2.750},  {60, 1.671, 2.000, 2.660}, {1000000, 1.645, 1.960, 2.576}};
  dof = std::max(1, dof);
  auto pick = [&](const Row& r) {
    if (confidence <= 0.90) return r.q90;
    if (confidence <= 0.95) return r.q90 + (r.q95 - r.q90) * (confidence - 0.90) / 0.05;
    return r.q95 + (r.q99 - r.q95) * std::min(1.0, (confidence - 0.95) / 0.04);
  };
  for (size_t i = 0; i + 1 < std::size(kTable); ++i) {
    const Row& lo = kTable[i];
    const Row& hi = kTable[i + 1];
    if (dof == lo.dof) return pick(lo);
    if (dof > lo.dof && dof < hi.dof) {
      double x = (1.0 / dof - 1.0 / hi.dof) / (1.0 / lo.dof - 1.0 / hi.dof);
      return pick(hi) + (pick(lo) - pick(hi)) * x;
    }
  }
  return pick(kTable[std::size(kTable) - 1]);
}

double NoiseFloor(const std::vector<double>& a1, const std::vector<double>& a2) {
  if (a1.empty() || a1.size() != a2.size()) return 0;
  // The median pair: one disturbed pair (another process, a cold cache) must not set
  // the threshold for the whole session.
  std::vector<double> dev;
  for (size_t i = 0; i < a1.size(); ++i) {
    if (a1[i] > 0 && a2[i] > 0) dev.push_back(std::abs(a2[i] / a1[i] - 1.0));
  }
  return dev.empty() ? 0 : Median(dev);
}

VerdictResult Judge(const VerdictInput& in) {
  HONE_CHECK(in.a.size() == in.b.size());
  VerdictResult r;
  r.pairs = static_cast<int>(in.a.size());
  r.threshold = std::max(in.min_gain, in.noise_floor);
  if (in.a.empty()) {
    r.reason = "no pairs";
    return r;
  }
  // Direction-adjusted: "better" is always a ratio above 1.
  const double confidence = 1.0 - (1.0 - in.confidence) / std::max(1, in.looks);
  const std::vector<double>& num = in.maximize ? in.b : in.a;
  const std::vector<double>& den = in.maximize ? in.a : in.b;
  r.bootstrap = BootstrapPairedRatio(den, num, confidence, 4000, in.seed);
  std::vector<double> logs;
  for (size_t i = 0; i < num.size(); ++i) {
    logs.push_back(num[i] > 0 && den[i] > 0 ? std::log(num[i] / den[i]) : 0.0);
  }
  double mean = Mean(logs);
  double sd = 0;
  if (logs.size() >= 2) {
    double acc = 0;
    for (double x : logs) acc += (x - mean) * (x - mean);
    sd = std::sqrt(acc / static_cast<double>(logs.size() - 1));  // sample sd for the t-interval
  }
  double half = logs.size() >= 2 ? StudentT(confidence, static_cast<int>(logs.size()) - 1) * sd /
                                       std::sqrt(static_cast<double>(logs.size()))
                                 : INFINITY;
  r.t_interval = Interval{std::exp(mean), std::exp(mean - half), std::exp(mean + half), confidence};
  r.ratio = Interval{r.bootstrap.estimate, std::min(r.bootstrap.lo, r.t_interval.lo),
                     std::max(r.bootstrap.hi, r.t_interval.hi), confidence};
  r.gain = r.ratio.estimate - 1.0;

  char buf[256];
  if (r.ratio.lo > 1.0 && r.gain >= r.threshold) {
    r.verdict = Verdict::kKeep;
    std::snprintf(buf, sizeof buf, "gain %+.2f%% >= threshold %.2f%%, %.0f%% interval [%.4f, %.4f] above 1",
                  r.gain * 100, r.threshold * 100, confidence * 100, r.ratio.lo, r.ratio.hi);
  } else if (r.ratio.hi < 1.0 + r.threshold) {
    r.verdict = Verdict::kRevert;
    std::snprintf(buf, sizeof buf, "gain %+.2f%%: interval [%.4f, %.4f] excludes a gain of %.2f%%", r.gain * 100,
                  r.ratio.lo, r.ratio.hi, r.threshold * 100);
  } else {
    r.verdict = Verdict::kInconclusive;
    std::snprintf(buf, sizeof buf, "gain %+.2f%%: interval [%.4f, %.4f] straddles 1 or the %.2f%% threshold",
                  r.gain * 100, r.ratio.lo, r.ratio.hi, r.threshold * 100);
  }
  r.reason = buf;
  return r;
}

}  // namespace hone::measure
