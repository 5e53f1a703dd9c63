// SurfaceSession: hone's session protocol replayed on a recorded response surface, so
// that any proposer is judged exactly as the coordinator would judge it, in
// microseconds instead of minutes per trial.
//
// What a real session does, and what this replays (session/coordinator.cc):
//   prelude    the stock measured in aa_pairs A/A pairs (two more while they differ
//              by > 10%): the noise floor is the median |A2/A1 - 1|, and the stock's
//              values are the incumbent's reference for screening;
//   screen     one trial of the candidate; a launch failure ends it (LAUNCH_FAILED), a
//              value more than screen_drop below the reference (the incumbent's latest
//              trials) drops it (SCREENED_OUT, with its measured gain); after
//              screen_recheck drops in a row the next drop first measures the incumbent
//              once more (it joins the reference, or restarts it when the host moved by
//              more than screen_drop) and the candidate is dropped only when it is worse
//              than that trial as well;
//   accuracy   before the pairs when the change is risky (a knob of medium or high
//              accuracy risk), after a KEEP otherwise: the point's recorded gate
//              outcome; a failure is ACCURACY_FAILED;
//   pairs      incumbent (A) and candidate (B) alternately, min_pairs, then pair_step
//              more while INCONCLUSIVE, up to max_pairs; each look is measure::Judge
//              (bootstrap and t intervals, threshold max(min_gain, noise floor),
//              Bonferroni over the planned looks);
//   retests    (measurement.pool_retests) a candidate judged INCONCLUSIVE before
//              against the same incumbent is judged on those pairs and its own
//              together, Bonferroni over every look taken;
//   KEEP       the candidate becomes the incumbent; its pair values are the new
//              reference for screening.
// A measurement of a point is its recorded mean times lognormal noise with the
// surface's pooled relative spread (the repeats' noise), drawn independently per trial.
// Every trial costs the point's recorded trial time; an accuracy check costs the
// recorded check time. A candidate off the surface, or one the catalog rejects, is
// INVALID and costs nothing (the coordinator would never run it either).
//
// The true quality of the incumbent (its recorded mean as a fraction of the best point
// that passes the accuracy gate) is what a strategy is scored on; the session itself
// only ever sees its noisy measurements. Not thread-safe; cheap to create per run.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/rng.h"
#include "search/proposer.h"
#include "search/surface.h"
#include "spec/session_spec.h"
#include "target/catalog.h"

namespace hone::lab {

// What a replay needs per point, computed once per surface (the surface's own accessors
// scan every point): trial and accuracy-check seconds, the best mean. Read-only; share it
// between threads.
struct SurfaceFacts {
  std::vector<double> trial_s;     // by point index
  std::vector<double> accuracy_s;  // by point index
  double best = 0;                 // the best mean that passes the accuracy gate
  double noise = 0;                // pooled relative spread of the repeats
  bool accuracy = false;           // some point carries an accuracy outcome
  static SurfaceFacts Of(const search::ResponseSurface& surface);
};

struct ProtocolOptions {
  spec::MeasurementSpec measurement;  // the session's defaults unless a spec says otherwise
  bool accuracy = true;  // the gate, from the points' recorded outcomes (none recorded: no gate)
  // Relative noise of one trial; unset: the surface's pooled repeat spread.
  std::optional<double> noise;
  // Host drift: every trial's value is scaled by a factor whose log walks (Brownian in
  // the run's trial time) with this sd per 10 minutes; 0: none. A recorded surface holds
  // each point's mean, not the hour it was measured in; live hosts drift (a demo's stock
  // ran 580-630 tok/s, then every change screened 11-19% below it), and drift is what a
  // protocol's unpaired steps (the screen) are exposed to.
  double drift = 0;
};

// One judged candidate: the observation the proposer gets, and what it cost.
struct Step {
  search::Observation obs;
  int trials = 0;        // server runs (screen, pairs)
  double seconds = 0;    // their recorded wall time, plus accuracy checks
  bool counted = false;  // it cost at least one trial (INVALID costs none)
};

class SurfaceSession {
 public:
  SurfaceSession(const search::ResponseSurface& surface, const SurfaceFacts& facts,
                 const target::KnobCatalog& catalog, const ProtocolOptions& options, uint64_t noise_seed);

  // The A/A prelude on the stock (once, before the first Evaluate).
  void Prelude();
  // Judges one candidate (a delta on the incumbent) as the coordinator does.
  Step Evaluate(const search::Candidate& candidate);

  const Config& incumbent() const { return incumbent_->config; }
  // The incumbent's recorded mean as a fraction of the surface's best.
  double quality() const;
  double noise_floor() const { return noise_floor_; }
  double noise() const { return noise_; }
  double elapsed_s() const { return elapsed_s_; }
  int trials() const { return trials_; }
  const std::set<std::string>& tried() const { return tried_; }

 private:
  double Measure(const search::SurfacePoint& p);
  bool Risky(const Config& delta) const;
  size_t Index(const search::SurfacePoint& p) const { return static_cast<size_t>(&p - surface_.points().data()); }

  const search::ResponseSurface& surface_;
  const SurfaceFacts& facts_;
  const target::KnobCatalog& catalog_;
  ProtocolOptions options_;
  Rng rng_;
  double noise_ = 0;
  double noise_floor_ = 0;
  const search::SurfacePoint* incumbent_ = nullptr;
  std::vector<double> best_values_;  // the screen's reference: the incumbent's latest trials
  size_t reference_size_ = 0;        // how many it keeps (as many as the baseline's or KEEP's)
  int screen_drops_in_row_ = 0;
  std::set<std::string> tried_;  // config hashes measured (the coordinator's ctx.tried)
  // INCONCLUSIVE comparisons a re-test continues, by (incumbent, candidate) point.
  struct Pooled {
    std::vector<double> a, b;
    int looks = 0;
  };
  std::map<std::pair<const search::SurfacePoint*, const search::SurfacePoint*>, Pooled> pooled_;
  double elapsed_s_ = 0;
  double drift_log_ = 0;  // the host's log speed factor now (ProtocolOptions::drift)
  int trials_ = 0;
  int candidates_ = 0;
};

}  // namespace hone::lab
