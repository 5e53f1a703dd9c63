// The search comparison harness: hone's planner, random search and grid search on a
// recorded response surface (surface.h), with the same trial budget, over many seeds,
// in seconds.
//
// A simulated session starts at the surface's stock point. Each trial judges one
// candidate configuration as the coordinator does, from a pair: the candidate and the
// incumbent each measured once, a measurement being the recorded mean times
// (1 + noise), the noise drawn from the surface's pooled repeat spread; the candidate
// is kept when it measures higher by more than the coordinator's threshold,
// max(min_gain 1%, the A/A noise floor). A launch failure recorded on the surface is a
// failed trial. Every strategy is judged by the same rule. Per run, the incumbent's true quality
// (recorded mean as a fraction of the surface's best) is tracked after every trial:
//   trials to 95%   the first trial after which the incumbent is within 95% of the best
//                   (never: counted as horizon + 1), walking up to every other point;
//   final quality   the incumbent's quality after `budget` trials; grid search then
//                   walks a coarse grid that fits the budget.
// Seeds vary the noise, random draws and grid orders. Pure computation; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "search/heuristics.h"
#include "search/surface.h"
#include "target/catalog.h"

namespace hone::search {

struct CompareOptions {
  int seeds = 100;
  int budget = 0;         // trials for the final-quality comparison; 0: a third of the points
  uint64_t seed = 1;
  double threshold = 0.95;
};

struct StrategyResult {
  std::string name;
  std::string detail;                // grid axes, ...
  std::vector<int> trials_to_reach;  // per seed; horizon + 1 when never
  std::vector<double> final_quality; // per seed, after `budget` trials
  std::vector<int> trials_used;      // per seed, at the budget (a strategy may stop early)
  double MedianTrials() const;       // over seeds (never = horizon + 1)
  double Percentile(double p) const;
  double ReachRate(int within) const;
  double MedianFinal() const;
  double MeanFinal() const;
  double P10Final() const;
};

struct CompareReport {
  int points = 0;
  int budget = 0;
  int horizon = 0;  // most trials a run may take (every non-stock point)
  int seeds = 0;
  double noise = 0;
  double keep_threshold = 0;
  double best = 0;
  std::string best_config;
  double stock_quality = 0;
  int within_threshold = 0;  // points within the threshold of the best
  double threshold = 0.95;
  Diagnosis diagnosis;
  std::vector<StrategyResult> strategies;  // planner, random, grid (full walk), grid (budget)
  double ratio_random = 0;  // median trials random / planner
  double ratio_grid = 0;    // median trials grid (full walk) / planner
  double planner_ge_grid = 0;  // share of seeds where planner's final >= grid's (budget)
  std::vector<std::string> example;  // the planner's trials in the first seed
  std::string example_tree;          // and its tree at the end
};

Result<CompareReport> Compare(const ResponseSurface& surface, const target::KnobCatalog& catalog,
                              const Heuristics& heuristics, const CompareOptions& options);
std::string FormatCompare(const ResponseSurface& surface, const CompareReport& report, const std::string& source);

}  // namespace hone::search
