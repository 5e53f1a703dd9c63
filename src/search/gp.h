// A one-dimensional Gaussian process over a numeric knob, and expected improvement:
// the planner's model-based proposer for numeric knobs (threads, ubatch_size, ...).
//
// Inputs are x = log2(value + 1), so that doubling a value is one unit whatever its
// size (and 0 stays usable); outputs are effects in log(objective ratio). Squared-
// exponential kernel with a prior mean of zero ("no change"), signal sd `scale`,
// length scale `length` (in doublings) and observation noise sd `noise`. With the few
// points a session measures per knob (< 20), the exact Cholesky solution is cheap.
// A plain value type.
#pragma once

#include <cstddef>
#include <vector>

namespace hone::search {

struct GpPrediction {
  double mean = 0;
  double sd = 0;
};

class Gp1d {
 public:
  Gp1d(double scale, double length, double noise) : scale_(scale), length_(length), noise_(noise) {}
  void Add(double x, double y) {
    xs_.push_back(x);
    ys_.push_back(y);
  }
  size_t size() const { return xs_.size(); }
  GpPrediction Predict(double x) const;

 private:
  double Kernel(double a, double b) const;
  double scale_, length_, noise_;
  std::vector<double> xs_, ys_;
};

// E[max(0, Y - best)] for Y ~ N(mean, sd^2).
double ExpectedImprovement(double mean, double sd, double best);
// E[Y * P(keep | Y)] for Y ~ N(mean, sd^2), where a measured gain keeps with
// probability Phi((Y - threshold) / se): the gain a candidate is expected to *prove*
// when only estimates at or above `threshold` (the keep threshold, log) are kept and
// the estimate has sd `se`. Closed form (E[Y Phi((Y - t)/se)] for Gaussian Y):
// mean Phi(z) + sd^2 / S phi(z), S = sqrt(sd^2 + se^2), z = (mean - t) / S. With a
// threshold of 0 and no estimation noise it is the expected improvement over 0 plus
// the mean's share below it; above a high threshold it is the tail a single move
// rarely reaches and a multi-knob move (larger sd) does.
double KeptGain(double mean, double sd, double threshold, double se);
// The GP input for a knob value.
double GpInput(double value);

}  // namespace hone::search
