// What judging one candidate costs under the session's measurement protocol, in
// server runs, so that the planner can rank ideas by expected gain per run (the
// "expected improvement per second" of Snoek, Larochelle, Adams, "Practical Bayesian
// Optimization of Machine Learning Algorithms", NeurIPS 2012) instead of per candidate.
//
// The protocol (session/coordinator.cc, lab/protocol.h): one screening trial drops a
// candidate measuring more than screen_drop below the incumbent; the rest get
// min_pairs paired trials, then pair_step more per look while the verdict is
// inconclusive, up to max_pairs; a look keeps when the interval's lower end is above 1
// and the gain reaches the threshold, reverts when its upper end is below 1 +
// threshold. A candidate far from the incumbent, better or worse, is decided in 1 or
// 1 + 2 min_pairs runs; one near the threshold or near neutral takes every look. The
// model: a look at k pairs sees the true log effect plus normal noise of sd
// noise x sqrt(2 / k), judged against a Student-t interval at the look's Bonferroni-
// corrected confidence; looks are treated as independent (which overstates the cost a
// little). Pure functions.
#pragma once

#include <vector>

#include "spec/session_spec.h"

namespace hone::search {

struct MeasurementProtocol {
  bool screen = true;
  double screen_drop = 0.10;
  int min_pairs = 3;
  int max_pairs = 9;
  int pair_step = 3;
  double min_gain = 0.01;
  double confidence = 0.95;
  // A re-test continues the INCONCLUSIVE looks of the same value against the same
  // incumbent (measurement.pool_retests): its verdict sees their pairs too.
  bool pool_retests = true;

  static MeasurementProtocol Of(const spec::MeasurementSpec& m);
};

// The protocol's looks, precomputed (Student-t quantiles per look). A value type.
class TrialCostModel {
 public:
  explicit TrialCostModel(const MeasurementProtocol& p);
  // Expected server runs to judge a candidate whose true effect (log objective ratio
  // to the incumbent) is `effect`, when one trial's log noise is `noise` and the A/A
  // noise floor is `floor` (the keep threshold is max(min_gain, floor)).
  double ExpectedRuns(double effect, double noise, double floor) const;
  // The same, averaged over a normal belief N(mean, sd^2) about the effect.
  double ExpectedRunsUnder(double mean, double sd, double noise, double floor) const;
  // The runs of a candidate decided at the first look (1 + 2 min_pairs; 2 min_pairs
  // without a screen): the unit the planner divides by.
  double DecisiveRuns() const;
  const MeasurementProtocol& protocol() const { return p_; }

 private:
  MeasurementProtocol p_;
  std::vector<int> pairs_;         // pairs at each look
  std::vector<double> quantiles_;  // the t quantile each look's interval uses
};

// Two-sided Student-t quantile: P(|T| <= q) = confidence for `dof` degrees of freedom.
double TQuantile(double confidence, int dof);

}  // namespace hone::search
