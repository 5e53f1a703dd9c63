#include "core/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"
#include "core/rng.h"

namespace hone {

double Mean(std::span<const double> xs) {
  if (xs.empty()) return 0.0;
  return std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
}

double PopulationStd(std::span<const double> xs) {
  if (xs.size() < 2) return 0.0;
  double m = Mean(xs);
  double acc = 0.0;
  for (double x : xs) acc += (x - m) * (x - m);
  return std::sqrt(acc / static_cast<double>(xs.size()));
}

double PercentileSorted(std::span<const double> sorted, double p) {
  if (sorted.empty()) return 0.0;
  if (sorted.size() == 1) return sorted[0];
  p = std::clamp(p, 0.0, 100.0);
  double k = static_cast<double>(sorted.size() - 1) * p / 100.0;
  size_t lo = static_cast<size_t>(std::floor(k));
  size_t hi = static_cast<size_t>(std::ceil(k));
  double frac = k - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double Percentile(std::span<const double> xs, double p) {
  std::vector<double> sorted(xs.begin(), xs.end());
  std::sort(sorted.begin(), sorted.end());
  return PercentileSorted(sorted, p);
}

double Median(std::span<const double> xs) { return Percentile(xs, 50.0); }

Summary Summarize(std::span<const double> xs) {
  Summary s;
  s.n = xs.size();
  if (xs.empty()) return s;
  std::vector<double> sorted(xs.begin(), xs.end());
  std::sort(sorted.begin(), sorted.end());
  s.mean = Mean(sorted);
  s.std = PopulationStd(sorted);
  s.min = sorted.front();
  s.max = sorted.back();
  s.p50 = PercentileSorted(sorted, 50);
  s.p75 = PercentileSorted(sorted, 75);
  s.p90 = PercentileSorted(sorted, 90);
  s.p95 = PercentileSorted(sorted, 95);
  s.p99 = PercentileSorted(sorted, 99);
  s.p999 = PercentileSorted(sorted, 99.9);
  return s;
}

namespace {

Interval FromReplicates(std::vector<double>& reps, double estimate, double confidence) {
  std::sort(reps.begin(), reps.end());
  double alpha = (1.0 - confidence) / 2.0;
  return Interval{estimate, PercentileSorted(reps, alpha * 100.0),
                  PercentileSorted(reps, (1.0 - alpha) * 100.0), confidence};
}

}  // namespace

Interval BootstrapRatioOfMeans(std::span<const double> a, std::span<const double> b,
                               double confidence, int iterations, uint64_t seed) {
  HONE_CHECK(!a.empty() && !b.empty());
  double estimate = Mean(b) / Mean(a);
  Rng rng(seed);
  std::vector<double> reps;
  reps.reserve(static_cast<size_t>(iterations));
  for (int it = 0; it < iterations; ++it) {
    double sa = 0, sb = 0;
    for (size_t i = 0; i < a.size(); ++i) sa += a[static_cast<size_t>(rng.Uniform(0, static_cast<int64_t>(a.size()) - 1))];
    for (size_t i = 0; i < b.size(); ++i) sb += b[static_cast<size_t>(rng.Uniform(0, static_cast<int64_t>(b.size()) - 1))];
    double ma = sa / static_cast<double>(a.size());
    double mb = sb / static_cast<double>(b.size());
    reps.push_back(ma > 0 ? mb / ma : 0.0);
  }
  return FromReplicates(reps, estimate, confidence);
}

Interval BootstrapPairedRatio(std::span<const double> a, std::span<const double> b,
                              double confidence, int iterations, uint64_t seed) {
  HONE_CHECK(!a.empty() && a.size() == b.size());
  double sum_a = std::accumulate(a.begin(), a.end(), 0.0);
  double sum_b = std::accumulate(b.begin(), b.end(), 0.0);
  double estimate = sum_a > 0 ? sum_b / sum_a : 0.0;
  Rng rng(seed);
  std::vector<double> reps;
  reps.reserve(static_cast<size_t>(iterations));
  const int64_t n = static_cast<int64_t>(a.size());
  for (int it = 0; it < iterations; ++it) {
    double sa = 0, sb = 0;
    for (int64_t i = 0; i < n; ++i) {
      size_t j = static_cast<size_t>(rng.Uniform(0, n - 1));
      sa += a[j];
      sb += b[j];
    }
    reps.push_back(sa > 0 ? sb / sa : 0.0);
  }
  return FromReplicates(reps, estimate, confidence);
}

}  // namespace hone
