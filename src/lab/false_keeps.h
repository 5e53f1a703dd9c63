// False keeps, measured: how often hone's decision protocol keeps a candidate that is
// identical to its incumbent (an A/A candidate under another name), and how often it
// keeps one with a known small true gain (the power), on recorded trial noise, or (A/A
// or with a real change) on live trials of a real server (`hone search noise --live SPEC
// [--candidate knob=value ...]`).
//
// Each decision is one fresh session's worth of protocol, run through the session's
// own code, not a replica of it: the A/A prelude (session::RunComparison without a
// verdict, aa_pairs pairs, two more while they differ by > 10%: measure::NoiseFloor),
// the screening trial (a drop below screen_drop is a kScreenDrop veto), the sequential
// paired comparison (session::RunComparison with the coordinator's verdict settings:
// threshold max(min_gain, noise floor), Bonferroni over the planned looks) and
// session::Decide. Only the trials are replayed: a trial's objective is
// base x (1 + effect, for the candidate) x (1 + r), r drawn with replacement from the
// recorded relative residuals of real repeated trials (a response surface's points
// measured more than once, lab/protocol.h), scaled by sqrt(n/(n-1)).
//
// The recorded repeats were taken minutes apart, so they carry drift that adjacent
// paired trials share; drawing each trial independently makes the replay's noise at
// least as hard on the protocol as the real pairs are.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/verdict.h"
#include "session/comparison.h"
#include "search/surface.h"
#include "spec/session_spec.h"

namespace hone::lab {

// The recorded relative residuals of a surface's repeated points (x / mean - 1,
// small-sample corrected); empty when no point was measured twice.
std::vector<double> RecordedResiduals(const search::ResponseSurface& surface);

struct FalseKeepOptions {
  spec::MeasurementSpec measurement;  // the protocol's settings (session defaults)
  double effect = 0;                  // the candidate's true relative gain (0: A/A)
  int decisions = 200;
  uint64_t seed = 1;
};

struct FalseKeepResult {
  int decisions = 0;
  int keeps = 0;
  int screened_out = 0, reverts = 0, inconclusive = 0;
  double rate = 0;           // keeps / decisions
  double lo = 0, hi = 0;     // its 95% Wilson interval
  double mean_pairs = 0;     // pairs per decision that reached the comparison
  double mean_noise_floor = 0;
  std::vector<double> pair_ratios;  // candidate / incumbent of every compared pair, all decisions
};

// A true effect estimated from paired ratios (candidate / incumbent): the geometric
// mean ratio minus 1 and its Student-t interval on the log ratios. With fewer than two
// ratios the interval is unbounded (lo = -1, hi = +inf).
struct EffectEstimate {
  int pairs = 0;
  double gain = 0, lo = -1, hi = 0;
};
EffectEstimate PairedEffect(const std::vector<double>& ratios, double confidence = 0.95);

// Runs `decisions` independent decisions on the residuals (non-empty).
FalseKeepResult MeasureKeeps(const std::vector<double>& residuals, const FalseKeepOptions& options);

// The same protocol over any trials: `make_runner(d)` gives decision d's trials (a
// replay, or live trials of a real server). A trial of the arm whose config has the
// knob "candidate" is the candidate; the runner decides what that means (a live runner
// launches the stock under that name: an A/A candidate). `on_decision` (optional) sees
// each decision's verdict, pairs and noise floor as it ends. An infrastructure error
// (an interrupt) ends the run.
struct DecisionNote {
  int index = 0;
  Verdict verdict = Verdict::kInconclusive;
  int pairs = 0;
  double noise_floor = 0;
  double gain = 0;  // the comparison's estimate (0 when screened out)
};
Result<FalseKeepResult> MeasureKeepsWith(const std::function<std::unique_ptr<session::TrialRunner>(int)>& make_runner,
                                         const FalseKeepOptions& options,
                                         const std::function<void(const DecisionNote&)>& on_decision = {});

// The 95% Wilson score interval of k successes in n trials.
void WilsonInterval(int k, int n, double& lo, double& hi);

}  // namespace hone::lab
