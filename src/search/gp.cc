#include "search/gp.h"

#include <algorithm>
#include <cmath>

namespace hone::search {

double GpInput(double value) { return std::log2(std::max(value, 0.0) + 1.0); }

double Gp1d::Kernel(double a, double b) const {
  double d = (a - b) / length_;
  return scale_ * scale_ * std::exp(-0.5 * d * d);
}

GpPrediction Gp1d::Predict(double x) const {
  const size_t n = xs_.size();
  if (n == 0) return {0.0, scale_};
  // K + noise^2 I = L L^T (Cholesky); K is positive definite thanks to the noise term.
  std::vector<double> l(n * n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j <= i; ++j) {
      double sum = Kernel(xs_[i], xs_[j]) + (i == j ? noise_ * noise_ : 0.0);
      for (size_t k = 0; k < j; ++k) sum -= l[i * n + k] * l[j * n + k];
      l[i * n + j] = i == j ? std::sqrt(std::max(sum, 1e-12)) : sum / l[j * n + j];
    }
  }
  auto solve_lower = [&](std::vector<double> b) {
    for (size_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < i; ++k) b[i] -= l[i * n + k] * b[k];
      b[i] /= l[i * n + i];
    }
    return b;
  };
  std::vector<double> kstar(n);
  for (size_t i = 0; i < n; ++i) kstar[i] = Kernel(x, xs_[i]);
  // mean = k*^T (LL^T)^-1 y = (L^-1 k*) . (L^-1 y); var = k(x,x) - |L^-1 k*|^2
  std::vector<double> v = solve_lower(kstar);
  std::vector<double> alpha = solve_lower(ys_);
  double mean = 0, reduce = 0;
  for (size_t i = 0; i < n; ++i) {
    mean += v[i] * alpha[i];
    reduce += v[i] * v[i];
  }
  double var = std::max(Kernel(x, x) - reduce, 1e-12);
  return {mean, std::sqrt(var)};
}

double ExpectedImprovement(double mean, double sd, double best) {
  double d = mean - best;
  if (sd <= 1e-12) return std::max(d, 0.0);
  double z = d / sd;
  double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI);
  double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  return std::max(d * cdf + sd * pdf, 0.0);
}

double KeptGain(double mean, double sd, double threshold, double se) {
  const double S = std::sqrt(sd * sd + se * se);
  if (S <= 1e-12) return mean >= threshold ? std::max(mean, 0.0) : 0.0;
  const double z = (mean - threshold) / S;
  const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI);
  const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  return std::max(mean * cdf + sd * sd / S * pdf, 0.0);
}

}  // namespace hone::search
