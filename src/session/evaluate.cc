// One candidate, from first trial to verdict: Coordinator::Assess gathers the
// evidence (a screening trial, the accuracy gate for risky changes, the paired
// comparison, the critic's review, the accuracy gate before a KEEP stands), Decide
// (session/comparison.h) turns it into the verdict, and Finish records it and adopts
// a KEEP. Also the source patches, whose verdict stands once the patch lane answered.
#include <algorithm>
#include <cstdio>

#include "core/stats.h"
#include "core/strings.h"
#include "session/comparison.h"
#include "session/coordinator.h"

namespace hone::session {

using measure::TrialRole;

namespace {

// Direction-adjusted "candidate is better by" for a screening comparison: the ratio of
// RelativeGain, or the plain difference where a value is not positive (RelativeGain's 0
// would pass any candidate there).
double Better(double candidate, double reference, bool maximize) {
  if (reference <= 0 || candidate <= 0) return maximize ? (candidate - reference) : (reference - candidate);
  return RelativeGain(candidate, reference, maximize);
}

}  // namespace

size_t Coordinator::ScreenReferenceSize() const {
  for (auto c = state_.candidates.rbegin(); c != state_.candidates.rend(); ++c) {
    if (c->verdict == Verdict::kKeep) return c->candidate_values.size();
  }
  return state_.baseline_values.size() + state_.aa_values.size();
}

int Coordinator::KeepsThisCycle() const {
  int keeps = 0;
  for (const CandidateRecord& c : state_.candidates) {
    keeps += c.cycle == state_.cycle && c.verdict == Verdict::kKeep &&
             (c.phase == CandidatePhase::kFramework || c.phase == CandidatePhase::kKernel);
  }
  return keeps;
}

std::string Coordinator::FrameworkNoteThisCycle() const {
  for (auto it = state_.phases.rbegin(); it != state_.phases.rend(); ++it) {
    if (it->phase == Phase::kFramework) return it->cycle == state_.cycle ? it->note : "";
  }
  return "";
}

measure::VerdictInput Coordinator::VerdictSettings(int looks, uint64_t seed) const {
  measure::VerdictInput in;
  in.maximize = spec_.objective.maximize;
  in.min_gain = spec_.measurement.min_gain;
  in.noise_floor = state_.noise_floor;
  in.confidence = spec_.measurement.confidence;
  in.looks = looks;
  in.seed = seed;
  return in;
}

int Coordinator::PlannedLooks() const {
  const auto& m = spec_.measurement;
  return session::PlannedLooks(m.min_pairs, m.max_pairs, m.pair_step);
}

Status Coordinator::CheckAccuracy(CandidateRecord& c) {
  HONE_ASSIGN_OR_RETURN(measure::AccuracyOutcome a, ledger_.RunAccuracy(c.config, c.id, c.server_binary));
  c.accuracy = a.detail;
  c.accuracy_passed = a.passed;
  ledger_.Event("accuracy", {{"candidate", c.id}, {"passed", a.passed ? "true" : "false"}, {"detail", a.detail}});
  ledger_.Progress("  accuracy " + std::string(a.passed ? "pass" : "FAIL") + ": " + a.detail);
  return Ok();
}

Status Coordinator::Assess(CandidateRecord& c, Evidence& e) {
  const measure::OperatingPoint point = ledger_.Primary();
  // Screening: one unpaired trial drops clear losers and launch failures cheaply.
  if (spec_.measurement.screen && c.screen_trial.empty() && c.candidate_values.empty()) {
    if (!ledger_.CanAfford(1)) {
      e.vetoes.push_back({VetoKind::kBudget, "not enough budget left to measure it"});
      return Ok();
    }
    HONE_ASSIGN_OR_RETURN(measure::TrialOutcome o,
                          ledger_.RunTrial(TrialRole::kScreen, c.config, point, c.server_binary));
    c.screen_trial = o.id;
    if (!o.launched || !o.valid) {
      c.failure_kind = CandidateFailureKind(o);
      e.vetoes.push_back(TrialVeto(o));
      return Ok();
    }
    if (!state_.best_values.empty()) {
      const bool maximize = spec_.objective.maximize;
      const double drop = spec_.measurement.screen_drop;
      double better = Better(o.objective, Mean(state_.best_values), maximize);
      std::string against = "the incumbent's mean";
      const int recheck = spec_.measurement.screen_recheck;
      if (better < -drop && recheck > 0 && state_.screen_drops_in_row >= recheck && ledger_.CanAfford(1)) {
        // Drops in a row: the changes, or the host? The incumbent once more; the
        // candidate is dropped only when it is worse than that trial as well.
        ledger_.Progress("  " + std::to_string(state_.screen_drops_in_row) +
                         " screen drops in a row: measuring the incumbent again");
        HONE_ASSIGN_OR_RETURN(measure::TrialOutcome r, ledger_.RunTrial(TrialRole::kIncumbent, c.incumbent, point,
                                                                        c.incumbent_binary));
        c.recheck_trial = r.id;
        state_.screen_drops_in_row = 0;
        if (r.launched && r.valid) {
          AddToScreenReference(state_.best_values, &state_.best_trials, r.objective, r.id,
                               ScreenReferenceSize(), drop, maximize);
          better = std::max(better, Better(o.objective, r.objective, maximize));
          against = "the incumbent's mean and its trial " + r.id + " (measured again)";
        }
        ledger_.Event("screen_recheck", {{"candidate", c.id}, {"trial", r.id},
                                         {"incumbent", Fmt("%.6g", r.objective)},
                                         {"reference", Fmt("%.6g", Mean(state_.best_values))}});
      }
      if (better < -drop) {
        ++state_.screen_drops_in_row;
        c.gain = better;
        char buf[200];
        std::snprintf(buf, sizeof buf, "screening trial %.1f%% worse than %s (drop at %.0f%%)", -better * 100,
                      against.c_str(), drop * 100);
        e.vetoes.push_back({VetoKind::kScreenDrop, buf});
        return Ok();
      }
      state_.screen_drops_in_row = 0;
    }
    HONE_TRY(ledger_.Save());
  }
  // Accuracy first for changes that can alter outputs: a failure costs no pairs.
  // A source patch is new code: always accuracy-checked before pairs.
  const bool risky = !c.patch.empty() || (services_.risky && services_.risky(c.delta));
  if (risky && c.accuracy.empty() && spec_.accuracy.enabled) {
    if (!ledger_.CanAffordAccuracy()) {  // the gate counts against the budget like a trial
      e.vetoes.push_back({VetoKind::kBudget, "not enough budget left for its accuracy check"});
      return Ok();
    }
    HONE_TRY(CheckAccuracy(c));
    if (!c.accuracy_passed) {
      e.vetoes.push_back({VetoKind::kAccuracy, c.accuracy});
      return Ok();
    }
    HONE_TRY(ledger_.Save());
  }
  // Paired, interleaved trials: incumbent (A) then candidate (B).
  const auto& m = spec_.measurement;
  PairPlan plan;
  plan.a = {TrialRole::kIncumbent, c.incumbent, c.incumbent_binary};
  plan.b = {TrialRole::kCandidate, c.config, c.server_binary};
  plan.point = point;
  plan.min_pairs = m.min_pairs;
  plan.max_pairs = m.max_pairs;
  plan.pair_step = m.pair_step;
  plan.judge = VerdictSettings(PlannedLooks(), static_cast<uint64_t>(state_.next_candidate));
  // A re-test continues the comparisons of the same configuration against the same
  // incumbent that ended INCONCLUSIVE: pairs measured apart in time are still pairs,
  // and every look of theirs counts in the correction. (Derived from the state, so a
  // resumed candidate pools the same ones.)
  c.pooled_with.clear();
  if (m.pool_retests) {
    const std::string config = c.config.Hash(), incumbent = c.incumbent.Hash();
    for (const CandidateRecord& p : state_.candidates) {
      if (&p == &c || p.id == c.id || p.config.Hash() != config || p.incumbent.Hash() != incumbent ||
          p.server_binary != c.server_binary || p.incumbent_binary != c.incumbent_binary) {
        continue;
      }
      if (p.verdict == Verdict::kKeep || p.verdict == Verdict::kRevert) {  // decided: a later look starts afresh
        plan.prior_a.clear();
        plan.prior_b.clear();
        plan.prior_looks = 0;
        c.pooled_with.clear();
        continue;
      }
      if (p.verdict != Verdict::kInconclusive || p.incumbent_values.size() != p.candidate_values.size() ||
          p.incumbent_values.empty()) {
        continue;
      }
      plan.prior_a.insert(plan.prior_a.end(), p.incumbent_values.begin(), p.incumbent_values.end());
      plan.prior_b.insert(plan.prior_b.end(), p.candidate_values.begin(), p.candidate_values.end());
      plan.prior_looks += PlannedLooks();
      c.pooled_with.push_back(p.id);
    }
    if (!c.pooled_with.empty()) {
      ledger_.Progress("  pooled with the pairs of " + Join(c.pooled_with, ", ") + " (" +
                       std::to_string(plan.prior_a.size()) + " pairs against the same incumbent)");
    }
  }
  PairLog log(c.incumbent_trials, c.incumbent_values, c.candidate_trials, c.candidate_values);
  HONE_ASSIGN_OR_RETURN(e.comparison, RunComparison(ledger_, plan, log));
  if (e.comparison->judged && !c.pooled_with.empty()) {
    e.comparison->judged->reason =
        "with " + Join(c.pooled_with, ", ") + "'s pairs, " + std::to_string(e.comparison->judged->pairs) +
        " in all: " + e.comparison->judged->reason;
  }
  if (const auto& judged = e.comparison->judged) {
    c.gain = judged->gain;
    c.ci_lo = judged->ratio.lo;
    c.ci_hi = judged->ratio.hi;
    c.threshold = judged->threshold;
    c.pairs = judged->pairs;
    c.reason = judged->reason;
  }
  if (e.comparison->end == ComparisonEnd::kFailedB) c.failure_kind = CandidateFailureKind(*e.comparison->failed);
  // Only a verdict the pairs reached goes on (a failed trial or an SLO already decided).
  const bool judged = e.comparison->judged &&
                      (e.comparison->end == ComparisonEnd::kComplete || e.comparison->end == ComparisonEnd::kBudget);
  if (!judged) return Ok();
  // SLOs: judged on the requests pooled over all of its trials in this comparison
  // (the screening trial and every B), never on one trial's handful. A KEEP requires
  // the candidate itself to meet them, whatever the incumbent does.
  if (ledger_.HasSlo()) {
    std::vector<std::string> ids = c.candidate_trials;
    if (!c.screen_trial.empty()) ids.push_back(c.screen_trial);
    const measure::PooledSlo slo = ledger_.JudgeSlo(ids, "candidate", c.id);
    c.slo = slo.Describe();
    c.slo_excess = slo.excess;
    ledger_.Progress("  SLO " + std::string(slo.ok ? "met" : "VIOLATED") + ": " + c.slo);
    if (!slo.ok) e.vetoes.push_back({VetoKind::kSloViolated, c.slo});
  }
  const Verdict measured = e.Decided().verdict;
  // The critic reviews every measured verdict; its refusal is a veto.
  if (services_.critic && c.critic.empty()) {
    auto review = services_.critic(c, measured);
    if (review) {
      c.critic = std::string(review->approve ? "approved" : "refused") + ": " + review->reason +
                 (review->learning.empty() ? "" : " (learning: " + review->learning + ")");
      c.critic_learning = review->learning;
      ledger_.Event("critic", {{"candidate", c.id},
                               {"approve", review->approve ? "true" : "false"},
                               {"reason", review->reason},
                               {"signature", review->signature}});
      if (!review->approve) e.vetoes.push_back({VetoKind::kCritic, review->reason});
    } else {
      c.critic = "no review: " + review.error().message;
    }
  }
  // Nothing is kept without an accuracy pass.
  if (e.Decided().verdict == Verdict::kKeep && spec_.accuracy.enabled && c.accuracy.empty()) {
    if (!ledger_.CanAffordAccuracy()) {
      e.vetoes.push_back({VetoKind::kBudget, "measured KEEP, but no budget left for the accuracy check it must pass"});
      return Ok();
    }
    HONE_TRY(CheckAccuracy(c));
    if (!c.accuracy_passed) e.vetoes.push_back({VetoKind::kAccuracy, c.accuracy});
  }
  return Ok();
}

Status Coordinator::Evaluate(CandidateRecord& c) {
  Evidence e;
  HONE_TRY(Assess(c, e));
  return Finish(c, e.Decided());
}

Status Coordinator::Finish(CandidateRecord& c, const Decision& d) {
  c.verdict = d.verdict;
  c.reason = d.reason;
  c.finished_s = ledger_.Now();
  const std::string verdict(VerdictName(c.verdict));
  ledger_.Event("verdict", {{"candidate", c.id},
                            {"verdict", verdict},
                            {"gain", Fmt("%.5f", c.gain)},
                            {"ci_lo", Fmt("%.5f", c.ci_lo)},
                            {"ci_hi", Fmt("%.5f", c.ci_hi)},
                            {"reason", c.reason}});
  ledger_.Progress("  " + c.id + " " + verdict + ": " + c.reason);
  if (c.verdict == Verdict::kKeep) {
    state_.best = c.config;
    state_.server_binary = c.server_binary;
    state_.best_trials = c.candidate_trials;
    state_.best_values = c.candidate_values;
    state_.screen_drops_in_row = 0;
  }
  if (services_.proposer) {
    search::Observation obs;
    obs.candidate.idea = c.idea;
    obs.candidate.delta = c.delta;
    obs.config = c.config;
    obs.verdict = c.verdict;
    obs.gain = c.gain;
    obs.failure_kind = c.failure_kind;
    services_.proposer->Observe(obs);
  }
  return ledger_.Save();
}

Status Coordinator::TryPatches() {
  if (!services_.patches) return Ok();
  for (const PatchIdea& idea : services_.patches->Pending(state_)) {
    // A patch costs a rebuild (priced at the builds so far) before its trials.
    const double est_build = state_.builds_run > 0 ? state_.build_seconds_total / state_.builds_run : 0.0;
    if (ledger_.Stopping() || !ledger_.CanAfford(1 + 2 * spec_.measurement.min_pairs, est_build)) break;
    // The build itself is bounded by what is left for it: a build that would not finish
    // in time is stopped and recorded, never allowed to run past the budget.
    const double build_room = ledger_.LeftBeyond(1 + 2 * spec_.measurement.min_pairs);
    if (build_room < 1) break;
    services_.patches->LimitBuild(std::chrono::seconds(static_cast<int64_t>(build_room)));
    search::Candidate cand{"patch:" + idea.id, idea.title, Config{}, "source patch " + idea.id, 0};
    CandidateRecord& c = ledger_.NewCandidate(CandidatePhase::kFramework, cand, state_.best);
    c.patch = idea.id;
    const std::string cid = c.id;
    HONE_TRY(ledger_.Save());
    // The lane commits only what the measurement keeps; the verdict stands once the
    // lane has answered (an uncommitted KEEP is not kept).
    std::optional<Evidence> evidence;
    Status measured = Ok();
    auto result = services_.patches->Try(idea, [&](const std::string& binary) -> Result<bool> {
      CandidateRecord* rec = ledger_.FindCandidate(cid);
      rec->server_binary = binary;
      evidence.emplace();
      measured = Assess(*rec, *evidence);
      HONE_TRY(measured);
      return evidence->Decided().verdict == Verdict::kKeep;
    });
    // Interrupted: the candidate stays pending (a resumed Framework closes it).
    if (!measured && measured.error().code == ErrorCode::kCancelled) return measured;
    if (!result && result.error().code == ErrorCode::kCancelled) return Fail(result.error());
    if (result && result->build_seconds > 0) {
      ++state_.builds_run;
      state_.build_seconds_total += result->build_seconds;
    }
    CandidateRecord* rec = ledger_.FindCandidate(cid);
    Evidence e = evidence.value_or(Evidence{});
    if (!measured) {
      e.vetoes.push_back({VetoKind::kPatchFailed, "the measurement failed: " + measured.error().message});
    } else if (!result) {
      e.vetoes.push_back({e.comparison ? VetoKind::kNotCommitted : VetoKind::kPatchFailed, result.error().message});
    } else {
      rec->rationale += (result->diffstat.empty() ? "" : " (" + result->diffstat + ")");
      const bool kept = result->status == PatchStatus::kKept;
      if (kept) rec->server_binary = result->binary;  // the persistent copy, not the build dir
      if (!evidence) {
        const std::string reason = result->reason + (result->stopped_by.empty() ? "" : " [" + result->stopped_by + "]");
        e.vetoes.push_back(
            {result->status == PatchStatus::kBuildFailed ? VetoKind::kBuildFailed : VetoKind::kPatchRejected, reason});
      } else if (!kept) {
        e.vetoes.push_back({VetoKind::kNotCommitted, result->reason});
      }
    }
    HONE_TRY(Finish(*rec, e.Decided()));
    ledger_.Event("patch", {{"candidate", rec->id},
                            {"patch", idea.id},
                            {"verdict", std::string(VerdictName(rec->verdict))},
                            {"reason", rec->reason}});
    HONE_TRY(ledger_.Save());
  }
  return Ok();
}

}  // namespace hone::session
