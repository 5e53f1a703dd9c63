// The matched-budget comparison: hone's planner against random search, a coarse grid
// and TPE on a recorded response surface, every strategy judged by the session's
// protocol (lab/protocol.h: A/A noise floor, screen, accuracy gate, sequential paired
// looks) on the surface's recorded noise, over many seeds, in seconds.
//
// A run is one simulated session: the prelude, then candidates from one strategy
// until its horizon. After every judged candidate the incumbent's true quality (its
// recorded mean as a fraction of the best point that passes the accuracy gate) and the
// search time so far (recorded trial and accuracy-check times after the prelude) are
// kept. The field's scores, per strategy:
//   to 95%      candidates judged until the incumbent is within `threshold` of the best
//               (never: horizon + 1), and the search time that took (the issue's "trials
//               and wall time to 95%"); medians and quartiles over seeds;
//   at budget   the incumbent's true quality after B candidates, B in `budgets`: grid
//               search walks a coarse grid that fits each budget (a new run per budget);
//   P(t)        the Kernel Tuner methodology's performance score against random search
//               (Willemsen, van Nieuwpoort, van Werkhoven, "A methodology for comparing
//               optimization algorithms for auto-tuning", FGCS 2024): with Q(t) the mean
//               true quality over seeds at search time t,
//                 P(t) = (Q_s(t) - Q_random(t)) / (1 - Q_random(t)),
//               0 = as good as random search, 1 = the optimum, negative = worse; sampled at
//               `curve_points` equidistant times up to T, the median time random search
//               takes for the largest budget; the area is the mean of the samples (the
//               methodology's aggregate score, the area under P(t) over T). Unlike the
//               methodology's calculated baseline (noise-free random draws), random search
//               here is judged by the same protocol as every other strategy. The spread is
//               a bootstrap over seeds (5th and 95th percentiles).
// Hold-out: heuristics name the surfaces they were tuned on (Heuristics::tuned_on); a
// comparison on one of them is marked as not held out.
// Pure computation; runs seeds on `jobs` threads.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/stats.h"
#include "lab/protocol.h"
#include "search/heuristics.h"
#include "search/surface.h"
#include "search/trial_cost.h"
#include "target/catalog.h"

namespace hone::lab {

struct CompareOptions {
  int seeds = 100;
  std::vector<int> budgets = {8, 16, 32, 64};
  uint64_t seed = 1;
  double threshold = 0.95;
  ProtocolOptions protocol;
  int curve_points = 50;
  int bootstrap = 200;
  int horizon = 0;           // most candidates a run may judge; 0: every other point
  // A session's stopping rule: a run ends after this many candidates in a row without a
  // KEEP (the coordinator's framework phase, search.plateau); 0: matched budgets only.
  int plateau = 0;
  std::string surface_name;  // the hold-out mark looks it up in Heuristics::tuned_on
  int jobs = 1;
};

struct StrategyResult {
  std::string name;
  std::string detail;
  std::vector<int> to_reach;                    // per seed: candidates (horizon + 1: never)
  std::vector<double> to_reach_s;               // per seed: search seconds (infinity: never)
  std::vector<int> to_reach_trials;             // per seed: server runs (-1: never)
  std::vector<std::vector<double>> at_budget;   // [budget][seed]: true quality
  std::vector<std::vector<double>> used;        // [budget][seed]: candidates judged by then
  std::vector<std::vector<double>> failed;      // [budget][seed]: of those, never served a valid run
  std::vector<std::vector<double>> curve;       // [seed][time]: true quality at search time t
  double dead_end = 0;  // seeds whose incumbent at the largest budget is a dead end below the threshold
  double MedianToReach() const;
  double ReachPercentile(double p) const;
  double ReachRate(int horizon) const;
  double MedianSecondsToReach() const;  // infinity when most runs never reach
  double MedianTrialsToReach() const;   // -1 when most runs never reach
};

struct PCurve {
  std::string strategy;
  std::vector<double> p, lo, hi;  // at CompareReport::times
  double area = 0, area_lo = 0, area_hi = 0;
  int first_active = 0;           // first time index where a curve left the stock's quality
  double min_p = 0;               // from first_active on
  bool above_zero = false;        // P > 0 from first_active on (and never < 0 before)
};

struct Goals {
  bool held_out = false;
  bool reach_vs_random = false;  // planner's median to 95% <= half of random's
  bool reach_vs_tpe = false;     // <= TPE's
  std::vector<bool> at_budget;   // per budget: planner's mean >= every baseline's mean
  bool p_above_zero = false;
  bool all() const;
};

struct CompareReport {
  std::string name;
  int points = 0;
  int horizon = 0;
  int plateau = 0;  // CompareOptions::plateau
  bool pool_retests = true;  // the protocol's measurement.pool_retests
  int screen_recheck = 0;    // the protocol's measurement.screen_recheck
  int min_pairs = 3, max_pairs = 9;  // the protocol's paired looks
  int seeds = 0;
  std::vector<int> budgets;
  double noise = 0;
  double drift = 0;  // ProtocolOptions::drift (0: none)
  double noise_floor_median = 0;  // the A/A floor the replayed preludes measured
  double keep_threshold_median = 0;
  double best = 0;
  std::string best_config;
  double stock_quality = 0;
  int within_threshold = 0;
  double threshold = 0.95;
  // The keep bar's dead ends (DeadEnd, at the median keep threshold): where they start,
  // the points no point beats by the bar, and those of them below `threshold`.
  double dead_end_from = 1;
  int dead_ends = 0, dead_ends_below = 0;
  bool timed = false;             // times in seconds (else trial units)
  std::string time_basis;         // where the times come from
  double prelude_s = 0;           // median
  std::vector<double> times;      // P(t) sample times (search seconds)
  search::Diagnosis diagnosis;
  std::vector<StrategyResult> strategies;  // planner, random, tpe, grid
  std::vector<PCurve> curves;              // planner, tpe, grid against random
  bool held_out = true;
  std::vector<std::string> tuned_on;
  Goals goals;
  std::vector<std::string> example;  // the planner's candidates in the first seed
  std::string example_tree;          // and its tree after the largest budget
};

Result<CompareReport> Compare(const search::ResponseSurface& surface, const target::KnobCatalog& catalog,
                              const search::Heuristics& heuristics, const CompareOptions& options);
std::string FormatCompare(const search::ResponseSurface& surface, const CompareReport& report,
                          const std::string& source);
// One line per surface: the goals and the figures they rest on.
std::string FormatSummary(const std::vector<CompareReport>& reports);

// mean(a) - mean(b) for two independent samples (a strategy's runs over seeds against
// another's), with a normal 95% interval. Exposed for tests.
Interval MeanDifference(std::span<const double> a, std::span<const double> b);

// An incumbent whose quality (its share of the best) is above 1 / (1 + bar) is a dead
// end: no point of the surface is `bar` better, so a protocol that keeps only a gain of
// at least `bar` never replaces it, however long the search. Exposed for tests.
bool DeadEnd(double quality, double bar);

// P(t) of one strategy against another from per-seed quality curves (exposed for tests):
// the curves are [seed][time]; `stock` is the quality every run starts from.
PCurve PerformanceCurve(const std::string& name, const std::vector<std::vector<double>>& strategy,
                        const std::vector<std::vector<double>>& random, double stock, int bootstrap, uint64_t seed);

}  // namespace hone::lab
