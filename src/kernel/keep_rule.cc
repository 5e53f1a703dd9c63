#include "kernel/keep_rule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/stats.h"

namespace hone::kernel {

namespace {

// Standard normal quantile (Acklam's rational approximation, |error| < 1.2e-9).
double NormalQuantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double lo = 0.02425;
  if (p < lo) {
    double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - lo) return -NormalQuantile(1 - p);
  double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

// Regularized incomplete beta I_x(a, b) by Lentz's continued fraction.
double IncompleteBeta(double x, double a, double b) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  if (x > (a + 1) / (a + b + 2)) return 1 - IncompleteBeta(1 - x, b, a);
  const double lbeta = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b);
  const double front = std::exp(std::log(x) * a + std::log(1 - x) * b + lbeta) / a;
  double f = 1, c = 1, d = 0;
  for (int i = 0; i <= 300; ++i) {
    int m = i / 2;
    double num;
    if (i == 0) {
      num = 1;
    } else if (i % 2 == 0) {
      num = (m * (b - m) * x) / ((a + 2.0 * m - 1) * (a + 2.0 * m));
    } else {
      num = -((a + m) * (a + b + m) * x) / ((a + 2.0 * m) * (a + 2.0 * m + 1));
    }
    d = 1 + num * d;
    if (std::fabs(d) < 1e-300) d = 1e-300;
    d = 1 / d;
    c = 1 + num / c;
    if (std::fabs(c) < 1e-300) c = 1e-300;
    double cd = c * d;
    f *= cd;
    if (std::fabs(1 - cd) < 1e-12) break;
  }
  return front * (f - 1);
}

// P(T <= t) for Student's t with df degrees of freedom.
double StudentTCdf(double t, int df) {
  double x = df / (df + t * t);
  double tail = 0.5 * IncompleteBeta(x, df / 2.0, 0.5);
  return t >= 0 ? 1 - tail : tail;
}

}  // namespace

double StudentTQuantile(double confidence, int df) {
  // Bisection on the CDF, seeded by the normal quantile (the t quantile is larger).
  double lo = NormalQuantile(confidence), hi = lo;
  while (StudentTCdf(hi, df) < confidence) hi = hi * 2 + 1;
  for (int i = 0; i < 200 && hi - lo > 1e-10; ++i) {
    double mid = 0.5 * (lo + hi);
    (StudentTCdf(mid, df) < confidence ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

KeepDecision DecideKeep(std::span<const PairedRun> runs, const KeepSpec& keep) {
  KeepDecision d;
  std::vector<double> logs;
  for (const PairedRun& r : runs) {
    if (r.baseline_ms > 0 && r.candidate_ms > 0) logs.push_back(std::log(r.baseline_ms / r.candidate_ms));
  }
  d.runs = static_cast<int>(logs.size());
  if (logs.empty()) {
    d.reason = "no complete paired run";
    return d;
  }
  const double m = Mean(logs);
  d.speedup = std::exp(m);
  if (logs.size() < 2) {
    d.lo = d.hi = d.speedup;
    d.reason = "needs at least 2 paired runs";
    return d;
  }
  const double n = static_cast<double>(logs.size());
  const double sd = PopulationStd(logs) * std::sqrt(n / (n - 1));  // sample (n-1) deviation
  const double half = StudentTQuantile(keep.confidence, d.runs - 1) * sd / std::sqrt(n);
  d.lo = std::exp(m - half);
  d.hi = std::exp(m + half);
  char buf[160];
  if (d.lo > 1.0 && d.speedup >= 1.0 + keep.min_improve) {
    d.verdict = Verdict::kKeep;
    std::snprintf(buf, sizeof buf, "x%.3f, lower bound x%.3f > 1 and >= floor x%.3f", d.speedup, d.lo,
                  1.0 + keep.min_improve);
  } else if (d.hi < 1.0) {
    d.verdict = Verdict::kRevert;
    std::snprintf(buf, sizeof buf, "significantly slower: x%.3f, upper bound x%.3f < 1", d.speedup, d.hi);
  } else if (d.lo > 1.0) {
    std::snprintf(buf, sizeof buf, "faster (x%.3f) but under the floor x%.3f", d.speedup, 1.0 + keep.min_improve);
  } else {
    std::snprintf(buf, sizeof buf, "not significant: x%.3f in [x%.3f, x%.3f]", d.speedup, d.lo, d.hi);
  }
  d.reason = buf;
  return d;
}

FamilyDecision DecideFamily(std::span<const CaseOutcome> cases, const KeepSpec& keep) {
  FamilyDecision f;
  double log_sum = 0, w_sum = 0, w_over_s = 0;
  f.worst = cases.empty() ? 0 : cases[0].speedup;
  int n = 0;
  for (const CaseOutcome& c : cases) {
    if (!(c.speedup > 0)) continue;
    log_sum += std::log(c.speedup);
    w_sum += c.weight;
    w_over_s += c.weight / c.speedup;
    f.worst = std::min(f.worst, c.speedup);
    ++n;
  }
  if (n == 0 || w_over_s <= 0) {
    f.reason = "no measured case";
    return f;
  }
  f.geomean = std::exp(log_sum / n);
  f.weighted = w_sum / w_over_s;
  char buf[160];
  if (f.weighted < 1.0 + keep.min_improve) {
    std::snprintf(buf, sizeof buf, "weighted speedup x%.3f under the floor x%.3f", f.weighted, 1.0 + keep.min_improve);
  } else if (f.worst < 1.0 - keep.max_case_regression) {
    std::snprintf(buf, sizeof buf, "a case regresses to x%.3f (limit x%.3f)", f.worst, 1.0 - keep.max_case_regression);
  } else {
    f.accepted = true;
    std::snprintf(buf, sizeof buf, "weighted x%.3f, geomean x%.3f, worst case x%.3f", f.weighted, f.geomean, f.worst);
  }
  f.reason = buf;
  return f;
}

}  // namespace hone::kernel
