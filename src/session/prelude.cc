// The prelude: a discarded warm-up launch, the enablement ladder when the stock
// configuration does not launch, the stock's A/A baseline (its noise floor), and
// the knowledge base's recipe replayed alongside it.
#include <cstdio>
#include <string>
#include <vector>

#include "bench/metrics.h"
#include "core/stats.h"
#include "session/coordinator.h"

namespace hone::session {

using measure::TrialRole;

Status Coordinator::Enable(const measure::TrialOutcome& failed) {
  // Enablement ladder: from least to most invasive, as data (data/enablement.yaml).
  std::vector<Config> rungs = services_.enablement ? services_.enablement(failed.failure_kind) : std::vector<Config>{};
  ledger_.Event("enablement", {{"failure_kind", failed.failure_kind}, {"rungs", std::to_string(rungs.size())}});
  ledger_.Progress("stock configuration failed (" + failed.failure_kind + "): trying " + std::to_string(rungs.size()) +
                   " enablement rungs");
  for (const Config& rung : rungs) {
    if (!ledger_.CanAfford(1) || ledger_.Stopping()) break;
    Config attempt = state_.stock.Merged(rung);
    HONE_ASSIGN_OR_RETURN(measure::TrialOutcome o,
                          ledger_.RunTrial(TrialRole::kEnablement, attempt, ledger_.Primary()));
    search::Candidate idea{"enable:" + rung.ToString(), "enablement", rung, "make the stock configuration launch", 0};
    CandidateRecord& c = ledger_.NewCandidate(CandidatePhase::kEnablement, idea, state_.stock);
    c.candidate_trials.push_back(o.id);
    c.finished_s = ledger_.Now();
    if (o.launched && o.valid && spec_.accuracy.enabled && services_.risky && services_.risky(rung)) {
      // A rung that changes numerics (a KV cache type) is accuracy-checked before it
      // becomes the stock, against the stock with only the rung's knobs that keep the
      // numerics: the closest configuration that does not change them. That reference
      // stays the session's (the executor keeps the first one it prepares).
      Config reference = state_.stock;
      for (const auto& [knob, value] : rung.values()) {
        if (!services_.risky(Config{{knob, value}})) reference.Set(knob, value);
      }
      Status prepared = services_.executor->PrepareAccuracy(reference);
      if (prepared) {
        HONE_TRY(CheckAccuracy(c));
      } else if (prepared.error().code == ErrorCode::kCancelled) {
        return prepared;
      } else {
        // Nothing to compare with: the rung is taken (or nothing runs), flagged in the report.
        c.accuracy = "not checked: the reference " + reference.ToString() + " did not start (" +
                     prepared.error().message + ")";
        c.accuracy_passed = false;
      }
      if (prepared && !c.accuracy_passed) {
        Decision d = Decide(std::nullopt, {{VetoKind::kAccuracy, c.accuracy}});
        c.verdict = d.verdict;
        c.reason = d.reason;
        ledger_.Event("verdict",
                      {{"candidate", c.id}, {"verdict", std::string(VerdictName(c.verdict))}, {"reason", c.reason}});
        HONE_TRY(ledger_.Save());
        continue;
      }
    }
    if (o.launched && o.valid) {
      c.verdict = Verdict::kKeep;
      c.reason = "launches (" + failed.failure_kind + " fixed by " + rung.ToString() + ")";
      state_.stock = attempt;
      state_.best = attempt;
      state_.stock_note = "enabled with " + rung.ToString() + " after " + failed.failure_kind;
      ledger_.Event("verdict",
                    {{"candidate", c.id}, {"verdict", std::string(VerdictName(c.verdict))}, {"reason", c.reason}});
      return ledger_.Save();
    }
    c.verdict = Verdict::kLaunchFailed;
    c.failure_kind = o.failure_kind;
    c.reason = o.failure_kind + ": " + o.failure_detail.substr(0, 200);
    HONE_TRY(ledger_.Save());
  }
  return Fail(
      Error{ErrorCode::kFailedPrecondition,
            "the stock configuration does not launch (" + failed.failure_kind + ") and no enablement rung fixed it",
            {{"detail", failed.failure_detail}}});
}

CandidateRecord* Coordinator::ReplayCandidate() {
  for (auto& c : state_.candidates) {
    if (c.phase == CandidatePhase::kPrelude) return &c;
  }
  return nullptr;
}

Status Coordinator::MatchWarmRecipe() {
  if (!services_.warm_start || !state_.warm_replay.empty() || ReplayCandidate()) return Ok();
  std::string explanation;
  auto warm = services_.warm_start->Match(&explanation);
  if (!warm || warm->config == state_.stock) {
    state_.warm_replay = "no recipe to replay" + (explanation.empty() ? "" : ": " + explanation);
    ledger_.Event("warm_replay", {{"result", state_.warm_replay}});
    return ledger_.Save();
  }
  search::Candidate idea{"warm-replay:recipe-" + std::to_string(warm->recipe_id), "warm replay",
                         warm->config.DeltaFrom(state_.stock), explanation, warm->recorded_gain};
  ledger_.NewCandidate(CandidatePhase::kPrelude, idea, state_.stock).recipe_id = warm->recipe_id;
  ledger_.Progress("replaying recipe " + std::to_string(warm->recipe_id) + " alongside the baseline");
  return ledger_.Save();
}

// The recipe's trial between a baseline trial (its A) and that pair's A/A twin.
Status Coordinator::ReplayBesideBaseline() {
  HONE_TRY(MatchWarmRecipe());
  CandidateRecord* r = ReplayCandidate();
  if (!r || r->verdict != Verdict::kPending || r->candidate_values.size() >= state_.baseline_trials.size()) return Ok();
  const std::string rid = r->id;
  HONE_ASSIGN_OR_RETURN(measure::TrialOutcome b,
                        ledger_.RunTrial(TrialRole::kReplay, r->config, ledger_.Primary(), r->server_binary));
  CandidateRecord* c = ledger_.FindCandidate(rid);
  if (!b.launched || !b.valid) {
    c->failure_kind = b.failure_kind;
    return Finish(*c, Decide(std::nullopt, {TrialVeto(b)}));
  }
  // Paired with the baseline trial just before it.
  c->incumbent_trials.push_back(state_.baseline_trials.back());
  c->incumbent_values.push_back(state_.baseline_values.back());
  c->candidate_trials.push_back(b.id);
  c->candidate_values.push_back(b.objective);
  if (!b.slo_ok) return Finish(*c, Decide(std::nullopt, {TrialVeto(b)}));
  return ledger_.Save();
}

// The replay: judged on the pairs it shared with the baseline, extended with ordinary
// pairs if those do not decide it; the knowledge base judges what that means.
Status Coordinator::JudgeReplay() {
  HONE_TRY(MatchWarmRecipe());
  CandidateRecord* r = ReplayCandidate();
  if (!r || !state_.warm_replay.empty()) return Ok();
  if (r->verdict == Verdict::kPending) HONE_TRY(Evaluate(*r));
  r = ReplayCandidate();
  WarmCandidate warm{r->config, r->predicted_gain, r->rationale, r->recipe_id};
  ReplayResult result{r->verdict,          r->gain,   r->verdict != Verdict::kAccuracyFailed,
                      r->candidate_trials, r->reason, state_.session_id};
  const std::string judged = services_.warm_start->RecordReplay(warm, result);
  char buf[160];
  std::snprintf(buf, sizeof buf, "recipe %lld replayed: %s, gain %+.1f%% vs recorded %+.1f%%",
                static_cast<long long>(warm.recipe_id), std::string(VerdictName(r->verdict)).c_str(), r->gain * 100,
                warm.recorded_gain * 100);
  state_.warm_replay = std::string(buf) + " (" + judged + ")";
  ledger_.Event("warm_replay", {{"result", state_.warm_replay}});
  return ledger_.Save();
}

PairPlan Coordinator::StockPairs(int pairs) const {
  PairPlan plan;
  plan.a = {TrialRole::kBaseline, state_.stock, ""};
  plan.b = {TrialRole::kAa, state_.stock, ""};
  plan.point = ledger_.Primary();
  plan.min_pairs = plan.max_pairs = pairs;
  return plan;  // no verdict: the A/A pairs measure the noise floor
}

Status Coordinator::Baseline() {
  PairLog log(state_.baseline_trials, state_.baseline_values, state_.aa_trials, state_.aa_values);
  // Stock baseline, interleaved with its A/A twin: A1 A2 A1 A2 ... When the knowledge
  // base has a recipe, its replay (B) rides along: A1 B A2 A1 B A2 ..., each B paired
  // with the A1 before it, so a warm session judges the recipe on the baseline's own
  // trials instead of measuring the stock twice more for it.
  while (true) {
    PairPlan plan = StockPairs(spec_.measurement.aa_pairs);
    plan.between = [this] { return ReplayBesideBaseline(); };
    plan.on_trial = [this](const measure::TrialOutcome& o, bool) {
      // Running means of the stock trials' throughput and bench metrics (roofline, search).
      double n = static_cast<double>(state_.baseline_trials.size() + state_.aa_trials.size());
      state_.baseline_total_tps += (o.result.total_tps - state_.baseline_total_tps) / n;
      state_.baseline_output_tps += (o.result.output_tps - state_.baseline_output_tps) / n;
      // The latencies and the server's scraped load (a full KV cache, a queue) are the
      // diagnosis's evidence (search::Diagnose).
      std::vector<std::string> names = {"mean_ttft_ms", "mean_tpot_ms"};
      for (std::string& m : bench::ServerMetricNames()) names.push_back(std::move(m));
      for (const std::string& name : names) {
        auto v = bench::Metric(o.result, name);
        if (!v) continue;
        // The mean over the trials that reported it (a scrape can be missing from one).
        const int k = ++state_.baseline_metric_trials[name];
        auto [it, fresh] = state_.baseline_metrics.try_emplace(name, *v);
        if (!fresh) it->second += (*v - it->second) / k;
      }
    };
    // A stock configuration that already ran is not broken: one failure on a busy
    // host (a timed-out request, a slow start) is measured again before giving up.
    plan.retry = [this](const measure::TrialOutcome& o) {
      if (state_.baseline_values.empty() || ++stock_failures_ > 1) return false;
      const std::string why =
          o.launched ? (o.invalid_reasons.empty() ? "invalid" : o.invalid_reasons[0]) : o.failure_kind;
      ledger_.Event("stock_trial_failed", {{"trial", o.id}, {"reason", why}});
      ledger_.Progress("the stock configuration's trial " + o.id + " failed (" + why + "): measuring it again");
      return true;
    };
    HONE_ASSIGN_OR_RETURN(ComparisonResult r, RunComparison(ledger_, plan, log));
    if (r.end == ComparisonEnd::kComplete) break;
    if (r.end == ComparisonEnd::kBudget) {
      if (state_.baseline_values.empty()) state_.stop_reason = "budget too small to measure the stock baseline";
      break;
    }
    const measure::TrialOutcome& o = *r.failed;
    if (!o.launched && state_.baseline_values.empty()) {
      auto enabled = Enable(o);
      if (!enabled) {
        state_.stop_reason = enabled.error().message;
        break;
      }
      continue;  // measure the enabled stock configuration
    }
    const std::string why =
        o.launched ? (o.invalid_reasons.empty() ? "invalid" : o.invalid_reasons[0]) : o.failure_kind;
    state_.stop_reason = "the stock configuration's trial " + o.id + " failed: " + why;
    break;
  }
  if (!state_.stop_reason.empty()) return Ok();
  // A noisy machine gets up to two more A/A pairs before the floor is fixed.
  const int aa_cap = spec_.measurement.aa_pairs + 2;
  while (!state_.baseline_values.empty() && state_.best_trials.empty() &&
         static_cast<int>(state_.aa_trials.size()) < aa_cap && !log.half_pair() &&
         measure::NoiseFloor(state_.baseline_values, state_.aa_values) > 0.10 &&
         ledger_.CanAfford(2 + 2 * spec_.measurement.min_pairs)) {
    ledger_.Progress("A/A pairs differ by " +
                     Fmt("%.1f%%", measure::NoiseFloor(state_.baseline_values, state_.aa_values) * 100) +
                     ": measuring another A/A pair");
    HONE_ASSIGN_OR_RETURN(ComparisonResult r, RunComparison(ledger_, StockPairs(log.pairs() + 1), log));
    if (r.end != ComparisonEnd::kComplete) break;
  }
  if (!state_.baseline_values.empty() && state_.best_trials.empty()) {
    state_.noise_floor = measure::NoiseFloor(log.a(), log.b());
    std::vector<double> all = state_.baseline_values;
    all.insert(all.end(), state_.aa_values.begin(), state_.aa_values.end());
    state_.baseline_objective = Mean(all);
    state_.best = state_.stock;
    state_.best_values = all;
    state_.best_trials = state_.baseline_trials;
    state_.best_trials.insert(state_.best_trials.end(), state_.aa_trials.begin(), state_.aa_trials.end());
    ledger_.Event("baseline", {{"objective", Fmt("%.6g", state_.baseline_objective)},
                               {"noise_floor", Fmt("%.5f", state_.noise_floor)}});
    ledger_.Progress("baseline " + spec_.objective.metric + " = " + Fmt("%.4g", state_.baseline_objective) +
                     ", A/A noise floor " + Fmt("%.2f%%", state_.noise_floor * 100));
    if (ledger_.HasSlo()) {  // the stock is held to the SLOs too, over all its trials
      const measure::PooledSlo slo = ledger_.JudgeSlo(state_.best_trials, "config", "stock");
      state_.stock_slo = slo.Describe();
      state_.stock_slo_excess = slo.excess;
      ledger_.Progress("stock SLO " + std::string(slo.ok ? "met" : "VIOLATED") + ": " + state_.stock_slo);
    }
    HONE_TRY(ledger_.Save());
  }
  return Ok();
}

Status Coordinator::Prelude() {
  ledger_.StartPhase(Phase::kPrelude);
  // One discarded launch first: the model file enters the page cache and lazy
  // initialisation happens outside the measurements (and a stock config that does not
  // launch is found before anything else).
  if (state_.warmup_trial.empty() && state_.baseline_values.empty()) {
    if (!ledger_.CanAfford(1)) {
      state_.stop_reason = "budget too small to measure the stock baseline";
      ledger_.EndPhase(PhaseStatus::kFailed, state_.stop_reason);
      return Ok();
    }
    HONE_ASSIGN_OR_RETURN(measure::TrialOutcome w,
                          ledger_.RunTrial(TrialRole::kWarmup, state_.stock, ledger_.Primary()));
    if (!w.launched) {
      auto enabled = Enable(w);
      if (!enabled) {
        state_.stop_reason = enabled.error().message;
        ledger_.EndPhase(PhaseStatus::kFailed, state_.stop_reason);
        return Ok();
      }
    }
    state_.warmup_trial = w.id;
    HONE_TRY(ledger_.Save());
  }
  HONE_TRY(Baseline());
  if (!state_.stop_reason.empty()) {
    ledger_.EndPhase(PhaseStatus::kFailed, state_.stop_reason);
    return Ok();
  }
  if (state_.baseline_values.empty()) {
    ledger_.EndPhase(PhaseStatus::kFailed, "no baseline");
    return Ok();
  }
  if (services_.roofline && state_.roofline.empty()) {
    auto note = services_.roofline(state_.stock, state_.baseline_total_tps, state_.baseline_output_tps);
    state_.roofline = note ? "stock: " + note->summary : "unavailable: " + note.error().message;
    if (note) {
      state_.roofline_saturated = note->saturated;
      state_.roofline_ratio = note->ratio;
      state_.roofline_bound = note->bound_class;
    }
    ledger_.Event("roofline", {{"summary", state_.roofline}});
    ledger_.Progress("roofline " + state_.roofline);
  }
  if (spec_.accuracy.enabled) {
    auto acc = services_.executor->PrepareAccuracy(state_.stock);
    if (!acc) {
      if (acc.error().code == ErrorCode::kCancelled) return acc;
      state_.close_accuracy = "accuracy reference unavailable: " + acc.error().message;
      ledger_.Progress(state_.close_accuracy);
    }
    state_.accuracy_gate = services_.executor->AccuracyGate();
    if (const auto& g = state_.accuracy_gate; g.prepared) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "accuracy gate: %d positions per check; A/A agreement %.1f%%", g.positions,
                    g.aa_agreement * 100);
      ledger_.Progress(std::string(buf) + (g.aa_ran ? "" : " (not measured)") +
                       (g.nondeterministic ? "; NONDETERMINISTIC: " + g.note : ""));
      ledger_.Event("accuracy_gate", {{"positions", std::to_string(g.positions)},
                                      {"aa_agreement", std::to_string(g.aa_agreement)},
                                      {"nondeterministic", g.nondeterministic ? "true" : "false"},
                                      {"note", g.note}});
    }
  }
  HONE_TRY(JudgeReplay());
  ledger_.EndPhase(PhaseStatus::kDone, "");
  return Ok();
}

}  // namespace hone::session
