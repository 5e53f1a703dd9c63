#include "search/trial_cost.h"

#include <algorithm>
#include <cmath>

namespace hone::search {

namespace {

double Phi(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// Continued fraction of the incomplete beta function (modified Lentz).
double BetaContinuedFraction(double a, double b, double x) {
  const double tiny = 1e-300;
  double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::abs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::abs(c) < tiny) c = tiny;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (std::abs(del - 1) < 1e-14) break;
  }
  return h;
}

// Regularized incomplete beta I_x(a, b).
double IncompleteBeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * BetaContinuedFraction(a, b, x) / a;
  return 1 - front * BetaContinuedFraction(b, a, 1 - x) / b;
}

// P(|T| <= t) for t >= 0.
double TwoSidedT(double t, int dof) {
  double v = static_cast<double>(dof);
  return 1 - IncompleteBeta(v / 2, 0.5, v / (v + t * t));
}

}  // namespace

double TQuantile(double confidence, int dof) {
  dof = std::max(1, dof);
  confidence = std::clamp(confidence, 0.0, 1 - 1e-12);
  double lo = 0, hi = 1;
  while (TwoSidedT(hi, dof) < confidence && hi < 1e12) hi *= 2;
  for (int i = 0; i < 100; ++i) {
    double mid = 0.5 * (lo + hi);
    (TwoSidedT(mid, dof) < confidence ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

MeasurementProtocol MeasurementProtocol::Of(const spec::MeasurementSpec& m) {
  return {.screen = m.screen, .screen_drop = m.screen_drop, .min_pairs = m.min_pairs, .max_pairs = m.max_pairs,
          .pair_step = m.pair_step, .min_gain = m.min_gain, .confidence = m.confidence,
          .pool_retests = m.pool_retests};
}

TrialCostModel::TrialCostModel(const MeasurementProtocol& p) : p_(p) {
  p_.min_pairs = std::max(1, p_.min_pairs);
  p_.pair_step = std::max(1, p_.pair_step);
  p_.max_pairs = std::max(p_.min_pairs, p_.max_pairs);
  for (int k = p_.min_pairs;; k = std::min(p_.max_pairs, k + p_.pair_step)) {
    pairs_.push_back(k);
    if (k >= p_.max_pairs) break;
  }
  // Each look at a Bonferroni-corrected confidence (measure/verdict.h).
  const double confidence = 1 - (1 - p_.confidence) / static_cast<double>(pairs_.size());
  for (int k : pairs_) quantiles_.push_back(k >= 2 ? TQuantile(confidence, k - 1) : INFINITY);
}

double TrialCostModel::DecisiveRuns() const { return (p_.screen ? 1 : 0) + 2.0 * p_.min_pairs; }

double TrialCostModel::ExpectedRuns(double effect, double noise, double floor) const {
  noise = std::max(noise, 1e-4);
  const double threshold = std::log1p(std::max(p_.min_gain, floor));
  double runs = 0;
  double pass = 1;
  if (p_.screen) {
    runs = 1;
    // One trial against the mean of the incumbent's values (a few): a little more than
    // one trial's noise.
    pass = 1 - Phi((std::log1p(-p_.screen_drop) - effect) / (noise * std::sqrt(1.25)));
  }
  double pairs_run = 0;
  double reach = 1;  // probability of getting to this look
  for (size_t i = 0; i < pairs_.size(); ++i) {
    int before = i == 0 ? 0 : pairs_[i - 1];
    pairs_run += reach * 2.0 * (pairs_[i] - before);
    double se = noise * std::sqrt(2.0 / pairs_[i]);
    double half = quantiles_[i] * se;
    // Inconclusive when the estimate lies between threshold - half and max(half, threshold).
    double hi = std::max(half, threshold);
    double lo = threshold - half;
    double inconclusive = lo < hi ? std::max(0.0, Phi((hi - effect) / se) - Phi((lo - effect) / se)) : 0.0;
    reach = inconclusive;
  }
  return runs + pass * pairs_run;
}

double TrialCostModel::ExpectedRunsUnder(double mean, double sd, double noise, double floor) const {
  if (sd <= 1e-9) return ExpectedRuns(mean, noise, floor);
  // Gauss-Hermite (probabilists'), 7 nodes.
  static constexpr double kNodes[] = {-3.7504397177257425, -2.3667594107345413, -1.1544053947399682, 0.0,
                                      1.1544053947399682,  2.3667594107345413,  3.7504397177257425};
  static constexpr double kWeights[] = {0.0005482688559722, 0.0307571239675865, 0.2401231786050127, 0.4571428571428571,
                                        0.2401231786050127, 0.0307571239675865, 0.0005482688559722};
  double sum = 0;
  for (size_t i = 0; i < 7; ++i) sum += kWeights[i] * ExpectedRuns(mean + sd * kNodes[i], noise, floor);
  return sum;
}

}  // namespace hone::search
