#include "lab/protocol.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/stats.h"
#include "measure/verdict.h"
#include "session/comparison.h"

namespace hone::lab {

using session::RelativeGain;

SurfaceFacts SurfaceFacts::Of(const search::ResponseSurface& surface) {
  SurfaceFacts f;
  for (const search::SurfacePoint& p : surface.points()) {
    f.trial_s.push_back(surface.TrialSeconds(p));
    f.accuracy_s.push_back(surface.AccuracySeconds(p));
  }
  f.best = surface.BestMean().value_or(0);
  f.noise = surface.RelativeNoise();
  f.accuracy = surface.accuracy_checked() > 0;
  return f;
}

SurfaceSession::SurfaceSession(const search::ResponseSurface& surface, const SurfaceFacts& facts,
                               const target::KnobCatalog& catalog, const ProtocolOptions& options, uint64_t noise_seed)
    : surface_(surface), facts_(facts), catalog_(catalog), options_(options), rng_(noise_seed) {
  noise_ = options_.noise ? *options_.noise : facts_.noise;
  incumbent_ = surface_.Find(surface_.stock());
  HONE_CHECK(incumbent_ != nullptr && !incumbent_->samples.empty());  // the caller checked the stock point
  tried_.insert(surface_.stock().Hash());
}

double SurfaceSession::Measure(const search::SurfacePoint& p) {
  // Lognormal with relative sd ~ noise and the recorded mean as its mean.
  double m = p.mean() * std::exp(noise_ * rng_.NextGaussian() - 0.5 * noise_ * noise_ + drift_log_);
  const double seconds = facts_.trial_s[Index(p)];
  elapsed_s_ += seconds;
  ++trials_;
  if (options_.drift > 0) drift_log_ += options_.drift * std::sqrt(seconds / 600.0) * rng_.NextGaussian();
  return m;
}

bool SurfaceSession::Risky(const Config& delta) const {
  for (const auto& [k, v] : delta.values()) {
    const target::Knob* knob = catalog_.Find(k);
    if (knob && target::ChangesNumerics(knob->accuracy_risk)) return true;
  }
  return false;
}

double SurfaceSession::quality() const {
  double v = incumbent_->mean();
  if (facts_.best <= 0 || v <= 0) return 0;
  return surface_.maximize() ? v / facts_.best : facts_.best / v;
}

void SurfaceSession::Prelude() {
  const auto& m = options_.measurement;
  const search::SurfacePoint& stock = *incumbent_;
  elapsed_s_ += facts_.trial_s[Index(stock)];  // the discarded first launch (page cache, lazy init)
  std::vector<double> base, aa;
  for (int i = 0; i < m.aa_pairs; ++i) {
    base.push_back(Measure(stock));
    aa.push_back(Measure(stock));
  }
  // A noisy machine gets up to two more A/A pairs before the floor is fixed.
  while (static_cast<int>(aa.size()) < m.aa_pairs + 2 && measure::NoiseFloor(base, aa) > 0.10) {
    base.push_back(Measure(stock));
    aa.push_back(Measure(stock));
  }
  noise_floor_ = measure::NoiseFloor(base, aa);
  best_values_ = base;
  best_values_.insert(best_values_.end(), aa.begin(), aa.end());
  reference_size_ = best_values_.size();
  // The accuracy reference: the stock's outputs, captured once.
  if (options_.accuracy && facts_.accuracy) elapsed_s_ += facts_.accuracy_s[Index(stock)];
}

namespace {

// A point that served no valid run (recorded "invalid: ...", e.g. a stalled server) or
// whose trial faulted twice ends its comparison as a session's does (VetoKind::kInvalidRun
// or kFaulted -> INVALID); one that never launched, LAUNCH_FAILED.
Verdict FailedVerdict(const search::SurfacePoint& p) {
  return p.no_valid_run() || p.faulted() ? Verdict::kInvalid : Verdict::kLaunchFailed;
}

// The failure kind a session gives such a candidate (session::CandidateFailureKind): none
// for a fault, which says nothing about the configuration.
std::string FailedKind(const search::SurfacePoint& p) {
  if (!p.failed()) return "unmeasured";
  return p.faulted() ? "" : p.failure_kind;
}

}  // namespace

Step SurfaceSession::Evaluate(const search::Candidate& candidate) {
  const auto& m = options_.measurement;
  const bool maximize = surface_.maximize();
  Step step;
  const double start_s = elapsed_s_;
  const int start_trials = trials_;
  Config full = incumbent_->config.Merged(candidate.delta);
  step.obs.candidate = candidate;
  step.obs.config = full;
  auto done = [&](Verdict verdict, double gain) {
    step.obs.verdict = verdict;
    step.obs.gain = gain;
    step.trials = trials_ - start_trials;
    step.seconds = elapsed_s_ - start_s;
    step.counted = step.trials > 0;
    return step;
  };
  const search::SurfacePoint* p = surface_.Find(full);
  tried_.insert(full.Hash());
  if (!p || !catalog_.Validate(full)) return done(Verdict::kInvalid, 0);
  ++candidates_;
  const bool launches = !p->failed() && !p->samples.empty();
  if (m.screen) {
    if (!launches) {
      // A failed launch costs its recorded time (or a trial's).
      elapsed_s_ += p->seconds.empty() ? facts_.trial_s[Index(*p)] : p->seconds.back();
      ++trials_;
      step.obs.failure_kind = FailedKind(*p);
      return done(FailedVerdict(*p), 0);
    }
    const double value = Measure(*p);
    double better = RelativeGain(value, Mean(best_values_), maximize);
    if (better < -m.screen_drop && m.screen_recheck > 0 && screen_drops_in_row_ >= m.screen_recheck) {
      // Drops in a row: is it the changes, or the host? The incumbent once more; the
      // candidate is dropped only when it is worse than that trial as well.
      const double fresh = Measure(*incumbent_);
      session::AddToScreenReference(best_values_, nullptr, fresh, "", reference_size_, m.screen_drop, maximize);
      screen_drops_in_row_ = 0;
      better = std::max(better, RelativeGain(value, fresh, maximize));
    }
    if (better < -m.screen_drop) {
      ++screen_drops_in_row_;
      return done(Verdict::kScreenedOut, better);
    }
    screen_drops_in_row_ = 0;
  }
  bool accuracy_checked = false;
  const bool gate = options_.accuracy && facts_.accuracy;  // a surface without outcomes: no gate
  if (gate && Risky(candidate.delta) && launches) {
    elapsed_s_ += facts_.accuracy_s[Index(*p)];
    accuracy_checked = true;
    if (!p->accuracy_ok()) return done(Verdict::kAccuracyFailed, 0);
  }
  // Paired, interleaved trials; sequential looks.
  std::vector<double> a, b;
  int target = m.min_pairs;
  const int looks = session::PlannedLooks(m.min_pairs, m.max_pairs, m.pair_step);
  measure::VerdictResult r;
  const auto key = std::make_pair(incumbent_, p);
  const Pooled prior = m.pool_retests && pooled_.contains(key) ? pooled_.at(key) : Pooled{};
  while (true) {
    while (static_cast<int>(b.size()) < target) {
      a.push_back(Measure(*incumbent_));
      if (!launches) {
        elapsed_s_ += facts_.trial_s[Index(*p)];
        ++trials_;
        step.obs.failure_kind = FailedKind(*p);
        return done(FailedVerdict(*p), 0);
      }
      b.push_back(Measure(*p));
    }
    measure::VerdictInput in{prior.a, prior.b, maximize, m.min_gain, noise_floor_, m.confidence};
    in.a.insert(in.a.end(), a.begin(), a.end());
    in.b.insert(in.b.end(), b.begin(), b.end());
    in.looks = prior.looks + looks;
    in.seed = static_cast<uint64_t>(candidates_);
    r = measure::Judge(in);
    if (r.verdict != Verdict::kInconclusive || target >= m.max_pairs) break;
    target = std::min(m.max_pairs, target + m.pair_step);
  }
  const Verdict verdict = r.verdict;
  if (verdict == Verdict::kInconclusive) {
    Pooled& next = pooled_[key];
    next.a.insert(next.a.end(), a.begin(), a.end());
    next.b.insert(next.b.end(), b.begin(), b.end());
    next.looks += looks;
  } else {
    pooled_.erase(key);
  }
  if (verdict == Verdict::kKeep && gate && !accuracy_checked) {
    elapsed_s_ += facts_.accuracy_s[Index(*p)];
    if (!p->accuracy_ok()) return done(Verdict::kAccuracyFailed, r.gain);
  }
  if (verdict == Verdict::kKeep) {
    incumbent_ = p;
    best_values_ = b;
    reference_size_ = b.size();
  }
  return done(verdict, r.gain);
}

}  // namespace hone::lab
