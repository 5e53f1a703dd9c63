#include "session/coordinator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/stats.h"
#include "core/strings.h"
#include "sys/files.h"
#include "sys/signals.h"

namespace hone::session {

namespace fs = std::filesystem;
using measure::TrialRole;

namespace {

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// Direction-adjusted "candidate is better by" for a screening comparison.
double Better(double candidate, double reference, bool maximize) {
  if (reference <= 0 || candidate <= 0) return maximize ? (candidate - reference) : (reference - candidate);
  return maximize ? candidate / reference - 1.0 : reference / candidate - 1.0;
}

}  // namespace

Coordinator::Coordinator(spec::SessionSpec spec, SessionServices services, SessionState state)
    : spec_(std::move(spec)),
      services_(std::move(services)),
      state_(std::move(state)),
      events_((fs::path(state_.run_dir) / "events.jsonl").string()) {}

SessionState Coordinator::NewState(const spec::SessionSpec& spec, const std::string& run_dir, sys::Clock& clock) {
  SessionState s;
  s.name = spec.name;
  s.spec_path = spec.source;
  s.run_dir = run_dir;
  s.started_unix_us = clock.WallMicros();
  s.session_id = spec.name + "-" + std::to_string(s.started_unix_us / 1000000);
  s.deadline_unix_s = static_cast<double>(s.started_unix_us) * 1e-6 + spec.budget.wall_s;
  s.stock = spec.target.base_config;
  s.best = s.stock;
  return s;
}

// ---- budget, time, bookkeeping ----

double Coordinator::Now() const {
  return static_cast<double>(services_.clock->WallMicros() - state_.started_unix_us) * 1e-6;
}

double Coordinator::Left() const {
  return state_.deadline_unix_s - static_cast<double>(services_.clock->WallMicros()) * 1e-6;
}

double Coordinator::EstTrial() const {
  if (state_.trials_run == 0) return 20.0;  // before the first measurement: a guess for CPU targets
  return state_.trial_seconds_total / state_.trials_run;
}

double Coordinator::CloseReserve() const {
  // Final re-validation (min_pairs pairs), the report, and a 2% margin.
  int pairs = state_.BestIsStock() ? 0 : spec_.measurement.min_pairs;
  return EstTrial() * 2 * pairs * 1.15 + 5.0 + 0.02 * spec_.budget.wall_s;
}

bool Coordinator::CanAfford(int trials) const {
  if (state_.phase == Phase::kClose) {
    // The close's own re-validation: only the report's margin is left to keep.
    return !sys::InterruptRequested() && Left() >= trials * EstTrial() + 5.0;
  }
  if (spec_.budget.max_trials > 0 && state_.trials_run + trials > spec_.budget.max_trials) return false;
  return Left() - CloseReserve() >= trials * EstTrial() * 1.15;
}

bool Coordinator::Stopping() const {
  return sys::InterruptRequested() || (spec_.budget.max_trials > 0 && state_.trials_run >= spec_.budget.max_trials);
}

measure::OperatingPoint Coordinator::Primary() const {
  return {spec_.workload.concurrency, spec_.workload.isl, spec_.workload.osl};
}

std::string Coordinator::NextTrialId() {
  char buf[16];
  std::snprintf(buf, sizeof buf, "t%04d", state_.next_trial++);
  return buf;
}

Status Coordinator::Save() {
  if (services_.proposer) state_.search_state = services_.proposer->Save();
  return SaveState(state_.run_dir, state_);
}

void Coordinator::Event(const std::string& type, std::vector<std::pair<std::string, std::string>> fields) {
  fields.insert(fields.begin(), {"phase", std::string(PhaseName(state_.phase))});
  (void)events_.Append(type, Now(), fields);
}

void Coordinator::Progress(const std::string& line) {
  if (services_.progress) services_.progress(line);
}

void Coordinator::StartPhase(Phase phase) {
  state_.phase = phase;
  // A resumed phase continues its open record.
  if (!state_.phases.empty() && state_.phases.back().phase == phase && state_.phases.back().cycle == state_.cycle &&
      state_.phases.back().status == PhaseStatus::kRunning) {
    return;
  }
  state_.phases.push_back({phase, state_.cycle, Now(), -1, PhaseStatus::kRunning, ""});
  Event("phase_started", {{"cycle", std::to_string(state_.cycle)}});
  Progress("phase " + std::string(PhaseName(phase)) + " (cycle " + std::to_string(state_.cycle) + ")");
}

void Coordinator::EndPhase(PhaseStatus status, const std::string& note) {
  if (!state_.phases.empty() && state_.phases.back().status == PhaseStatus::kRunning) {
    state_.phases.back().finished_s = Now();
    state_.phases.back().status = status;
    state_.phases.back().note = note;
  }
  const std::string name(PhaseStatusName(status));
  Event("phase_finished", {{"status", name}, {"note", note}});
  if (!note.empty()) Progress(std::string(PhaseName(state_.phase)) + ": " + name + " (" + note + ")");
}

Result<measure::TrialOutcome> Coordinator::RunTrial(const Arm& arm, const measure::OperatingPoint& p) {
  if (sys::InterruptRequested()) return Cancelled("interrupted");
  measure::TrialRequest req{NextTrialId(), arm.role, arm.config, p, arm.server_binary};
  // Persist the id before the trial: a crash mid-trial never reuses it.
  HONE_TRY(Save());
  const std::string role(measure::TrialRoleName(arm.role));
  Event("trial_started", {{"trial", req.id}, {"role", role}, {"config", arm.config.ToString()}, {"point", p.Label()}});
  Progress("trial " + req.id + " " + role + " " + arm.config.ToString());
  HONE_ASSIGN_OR_RETURN(measure::TrialOutcome o, services_.executor->Run(req));
  ++state_.trials_run;
  state_.trial_seconds_total += o.wall_s;
  std::string status = !o.launched ? "launch_failed:" + o.failure_kind : !o.valid ? "invalid" : "ok";
  Event("trial_finished", {{"trial", o.id}, {"status", status}, {"objective", Fmt("%.6g", o.objective)},
                           {"wall_s", Fmt("%.2f", o.wall_s)}});
  if (o.launched && o.valid) {
    Progress("  " + o.id + " " + spec_.objective.metric + " = " + Fmt("%.4g", o.objective));
  } else {
    Progress("  " + o.id + " " + status + (o.failure_detail.empty() ? "" : ": " + o.failure_detail.substr(0, 160)));
  }
  return o;
}

CandidateRecord& Coordinator::NewCandidate(CandidatePhase phase, const search::Candidate& idea,
                                           const Config& incumbent) {
  CandidateRecord c;
  char buf[16];
  std::snprintf(buf, sizeof buf, "c%03d", state_.next_candidate++);
  c.id = buf;
  c.phase = phase;
  c.cycle = state_.cycle;
  c.idea = idea.idea;
  c.rationale = idea.rationale;
  c.delta = idea.delta;
  c.incumbent = incumbent;
  c.config = incumbent.Merged(idea.delta);
  c.predicted_gain = idea.expected_gain;
  c.server_binary = state_.server_binary;
  c.incumbent_binary = state_.server_binary;
  c.started_s = Now();
  state_.candidates.push_back(std::move(c));
  Event("candidate_started", {{"candidate", state_.candidates.back().id}, {"idea", idea.idea},
                              {"config", state_.candidates.back().config.ToString()}});
  Progress("candidate " + state_.candidates.back().id + ": " + idea.idea);
  return state_.candidates.back();
}

CandidateRecord* Coordinator::FindCandidate(const std::string& id) {
  for (auto& c : state_.candidates) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

void Coordinator::Observe(const CandidateRecord& c) {
  if (!services_.proposer) return;
  search::Observation obs;
  obs.candidate.idea = c.idea;
  obs.candidate.delta = c.delta;
  obs.config = c.config;
  obs.verdict = c.verdict;
  obs.gain = c.gain;
  obs.failure_kind = c.failure_kind;
  services_.proposer->Observe(obs);
}

int Coordinator::KeepsThisCycle() const {
  int keeps = 0;
  for (const CandidateRecord& c : state_.candidates) {
    keeps += c.cycle == state_.cycle && c.verdict == Verdict::kKeep &&
             (c.phase == CandidatePhase::kFramework || c.phase == CandidatePhase::kKernel);
  }
  return keeps;
}

// ---- one candidate: evidence, verdict, adoption ----

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
  HONE_ASSIGN_OR_RETURN(measure::AccuracyOutcome a, services_.executor->CheckAccuracy(c.config, c.id, c.server_binary));
  c.accuracy = a.detail;
  c.accuracy_passed = a.passed;
  Event("accuracy", {{"candidate", c.id}, {"passed", a.passed ? "true" : "false"}, {"detail", a.detail}});
  Progress("  accuracy " + std::string(a.passed ? "pass" : "FAIL") + ": " + a.detail);
  return Ok();
}

Status Coordinator::Assess(CandidateRecord& c, Evidence& e) {
  const measure::OperatingPoint point = Primary();
  // Screening: one unpaired trial drops clear losers and launch failures cheaply.
  if (spec_.measurement.screen && c.screen_trial.empty() && c.candidate_values.empty()) {
    if (!CanAfford(1)) {
      e.vetoes.push_back({VetoKind::kBudget, "not enough budget left to measure it"});
      return Ok();
    }
    HONE_ASSIGN_OR_RETURN(measure::TrialOutcome o, RunTrial(TrialRole::kScreen, c.config, point, c.server_binary));
    c.screen_trial = o.id;
    if (!o.launched || !o.valid) {
      c.failure_kind = o.failure_kind;
      e.vetoes.push_back(TrialVeto(o));
      return Ok();
    }
    if (!state_.best_values.empty()) {
      double better = Better(o.objective, Mean(state_.best_values), spec_.objective.maximize);
      if (better < -spec_.measurement.screen_drop) {
        c.gain = better;
        char buf[160];
        std::snprintf(buf, sizeof buf, "screening trial %.1f%% worse than the incumbent's mean (drop at %.0f%%)",
                      -better * 100, spec_.measurement.screen_drop * 100);
        e.vetoes.push_back({VetoKind::kScreenDrop, buf});
        return Ok();
      }
    }
    HONE_TRY(Save());
  }
  // Accuracy first for changes that can alter outputs: a failure costs no pairs.
  // A source patch is new code: always accuracy-checked before pairs.
  const bool risky = !c.patch.empty() || (services_.risky && services_.risky(c.delta));
  if (risky && c.accuracy.empty() && spec_.accuracy.enabled) {
    HONE_TRY(CheckAccuracy(c));
    if (!c.accuracy_passed) {
      e.vetoes.push_back({VetoKind::kAccuracy, c.accuracy});
      return Ok();
    }
    HONE_TRY(Save());
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
  plan.slo_veto = true;
  PairLog log(c.incumbent_trials, c.incumbent_values, c.candidate_trials, c.candidate_values);
  HONE_ASSIGN_OR_RETURN(e.comparison, RunComparison(*this, plan, log));
  if (const auto& judged = e.comparison->judged) {
    c.gain = judged->gain;
    c.ci_lo = judged->ratio.lo;
    c.ci_hi = judged->ratio.hi;
    c.threshold = judged->threshold;
    c.pairs = judged->pairs;
    c.reason = judged->reason;
  }
  if (e.comparison->end == ComparisonEnd::kFailedB) c.failure_kind = e.comparison->failed->failure_kind;
  // Only a verdict the pairs reached goes on (a failed trial or an SLO already decided).
  const bool judged = e.comparison->judged && (e.comparison->end == ComparisonEnd::kComplete ||
                                               e.comparison->end == ComparisonEnd::kBudget);
  if (!judged) return Ok();
  const Verdict measured = e.Decided().verdict;
  // The critic reviews every measured verdict; its refusal is a veto.
  if (services_.critic && c.critic.empty()) {
    auto review = services_.critic(c, measured);
    if (review) {
      c.critic = std::string(review->approve ? "approved" : "refused") + ": " + review->reason +
                 (review->learning.empty() ? "" : " (learning: " + review->learning + ")");
      Event("critic", {{"candidate", c.id}, {"approve", review->approve ? "true" : "false"},
                       {"reason", review->reason}, {"signature", review->signature}});
      if (!review->approve) e.vetoes.push_back({VetoKind::kCritic, review->reason});
    } else {
      c.critic = "no review: " + review.error().message;
    }
  }
  // Nothing is kept without an accuracy pass.
  if (e.Decided().verdict == Verdict::kKeep && spec_.accuracy.enabled && c.accuracy.empty()) {
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
  c.finished_s = Now();
  const std::string verdict(VerdictName(c.verdict));
  Event("verdict", {{"candidate", c.id}, {"verdict", verdict}, {"gain", Fmt("%.5f", c.gain)},
                    {"ci_lo", Fmt("%.5f", c.ci_lo)}, {"ci_hi", Fmt("%.5f", c.ci_hi)}, {"reason", c.reason}});
  Progress("  " + c.id + " " + verdict + ": " + c.reason);
  if (c.verdict == Verdict::kKeep) {
    state_.best = c.config;
    state_.server_binary = c.server_binary;
    state_.best_trials = c.candidate_trials;
    state_.best_values = c.candidate_values;
  }
  Observe(c);
  return Save();
}

// ---- prelude: warm-up, enablement, baseline, warm replay ----

Status Coordinator::Enable(const measure::TrialOutcome& failed) {
  // Enablement ladder: from least to most invasive, as data (data/enablement.yaml).
  std::vector<Config> rungs = services_.enablement ? services_.enablement(failed.failure_kind) : std::vector<Config>{};
  Event("enablement", {{"failure_kind", failed.failure_kind}, {"rungs", std::to_string(rungs.size())}});
  Progress("stock configuration failed (" + failed.failure_kind + "): trying " + std::to_string(rungs.size()) +
           " enablement rungs");
  for (const Config& rung : rungs) {
    if (!CanAfford(1) || Stopping()) break;
    Config attempt = state_.stock.Merged(rung);
    HONE_ASSIGN_OR_RETURN(measure::TrialOutcome o, RunTrial(TrialRole::kEnablement, attempt, Primary()));
    search::Candidate idea{"enable:" + rung.ToString(), "enablement", rung, "make the stock configuration launch", 0};
    CandidateRecord& c = NewCandidate(CandidatePhase::kEnablement, idea, state_.stock);
    c.candidate_trials.push_back(o.id);
    c.finished_s = Now();
    if (o.launched && o.valid) {
      c.verdict = Verdict::kKeep;
      c.reason = "launches (" + failed.failure_kind + " fixed by " + rung.ToString() + ")";
      state_.stock = attempt;
      state_.best = attempt;
      state_.stock_note = "enabled with " + rung.ToString() + " after " + failed.failure_kind;
      Event("verdict", {{"candidate", c.id}, {"verdict", std::string(VerdictName(c.verdict))}, {"reason", c.reason}});
      return Save();
    }
    c.verdict = Verdict::kLaunchFailed;
    c.failure_kind = o.failure_kind;
    c.reason = o.failure_kind + ": " + o.failure_detail.substr(0, 200);
    HONE_TRY(Save());
  }
  return Fail(Error{ErrorCode::kFailedPrecondition,
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
    Event("warm_replay", {{"result", state_.warm_replay}});
    return Save();
  }
  search::Candidate idea{"warm-replay:recipe-" + std::to_string(warm->recipe_id), "warm replay",
                         warm->config.DeltaFrom(state_.stock), explanation, warm->recorded_gain};
  NewCandidate(CandidatePhase::kPrelude, idea, state_.stock).recipe_id = warm->recipe_id;
  Progress("replaying recipe " + std::to_string(warm->recipe_id) + " alongside the baseline");
  return Save();
}

// The recipe's trial between a baseline trial (its A) and that pair's A/A twin.
Status Coordinator::ReplayBesideBaseline() {
  HONE_TRY(MatchWarmRecipe());
  CandidateRecord* r = ReplayCandidate();
  if (!r || r->verdict != Verdict::kPending || r->candidate_values.size() >= state_.baseline_trials.size()) return Ok();
  const std::string rid = r->id;
  HONE_ASSIGN_OR_RETURN(measure::TrialOutcome b, RunTrial(TrialRole::kReplay, r->config, Primary(), r->server_binary));
  CandidateRecord* c = FindCandidate(rid);
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
  return Save();
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
  ReplayResult result{r->verdict,         r->gain,   r->verdict != Verdict::kAccuracyFailed,
                      r->candidate_trials, r->reason, state_.session_id};
  const std::string judged = services_.warm_start->RecordReplay(warm, result);
  char buf[160];
  std::snprintf(buf, sizeof buf, "recipe %lld replayed: %s, gain %+.1f%% vs recorded %+.1f%%",
                static_cast<long long>(warm.recipe_id), std::string(VerdictName(r->verdict)).c_str(), r->gain * 100,
                warm.recorded_gain * 100);
  state_.warm_replay = std::string(buf) + " (" + judged + ")";
  Event("warm_replay", {{"result", state_.warm_replay}});
  return Save();
}

PairPlan Coordinator::StockPairs(int pairs) const {
  PairPlan plan;
  plan.a = {TrialRole::kBaseline, state_.stock, ""};
  plan.b = {TrialRole::kAa, state_.stock, ""};
  plan.point = Primary();
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
      for (const char* name : {"mean_ttft_ms", "mean_tpot_ms", "kv_usage_max", "queue_depth_mean", "running_mean"}) {
        auto v = bench::Metric(o.result, name);
        if (!v) continue;
        auto [it, fresh] = state_.baseline_metrics.try_emplace(name, *v);
        if (!fresh) it->second += (*v - it->second) / n;
      }
    };
    // A stock configuration that already ran is not broken: one failure on a busy
    // host (a timed-out request, a slow start) is measured again before giving up.
    plan.retry = [this](const measure::TrialOutcome& o) {
      if (state_.baseline_values.empty() || ++stock_failures_ > 1) return false;
      const std::string why = o.launched ? (o.invalid_reasons.empty() ? "invalid" : o.invalid_reasons[0]) : o.failure_kind;
      Event("stock_trial_failed", {{"trial", o.id}, {"reason", why}});
      Progress("the stock configuration's trial " + o.id + " failed (" + why + "): measuring it again");
      return true;
    };
    HONE_ASSIGN_OR_RETURN(ComparisonResult r, RunComparison(*this, plan, log));
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
    const std::string why = o.launched ? (o.invalid_reasons.empty() ? "invalid" : o.invalid_reasons[0]) : o.failure_kind;
    state_.stop_reason = "the stock configuration's trial " + o.id + " failed: " + why;
    break;
  }
  if (!state_.stop_reason.empty()) return Ok();
  // A noisy machine gets up to two more A/A pairs before the floor is fixed.
  const int aa_cap = spec_.measurement.aa_pairs + 2;
  while (!state_.baseline_values.empty() && state_.best_trials.empty() &&
         static_cast<int>(state_.aa_trials.size()) < aa_cap && !log.half_pair() &&
         measure::NoiseFloor(state_.baseline_values, state_.aa_values) > 0.10 &&
         CanAfford(2 + 2 * spec_.measurement.min_pairs)) {
    Progress("A/A pairs differ by " + Fmt("%.1f%%", measure::NoiseFloor(state_.baseline_values, state_.aa_values) * 100) +
             ": measuring another A/A pair");
    HONE_ASSIGN_OR_RETURN(ComparisonResult r, RunComparison(*this, StockPairs(log.pairs() + 1), log));
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
    Event("baseline", {{"objective", Fmt("%.6g", state_.baseline_objective)},
                       {"noise_floor", Fmt("%.5f", state_.noise_floor)}});
    Progress("baseline " + spec_.objective.metric + " = " + Fmt("%.4g", state_.baseline_objective) +
             ", A/A noise floor " + Fmt("%.2f%%", state_.noise_floor * 100));
    HONE_TRY(Save());
  }
  return Ok();
}

Status Coordinator::Prelude() {
  StartPhase(Phase::kPrelude);
  // One discarded launch first: the model file enters the page cache and lazy
  // initialisation happens outside the measurements (and a stock config that does not
  // launch is found before anything else).
  if (state_.warmup_trial.empty() && state_.baseline_values.empty()) {
    if (!CanAfford(1)) {
      state_.stop_reason = "budget too small to measure the stock baseline";
      EndPhase(PhaseStatus::kFailed, state_.stop_reason);
      return Ok();
    }
    HONE_ASSIGN_OR_RETURN(measure::TrialOutcome w, RunTrial(TrialRole::kWarmup, state_.stock, Primary()));
    if (!w.launched) {
      auto enabled = Enable(w);
      if (!enabled) {
        state_.stop_reason = enabled.error().message;
        EndPhase(PhaseStatus::kFailed, state_.stop_reason);
        return Ok();
      }
    }
    state_.warmup_trial = w.id;
    HONE_TRY(Save());
  }
  HONE_TRY(Baseline());
  if (!state_.stop_reason.empty()) {
    EndPhase(PhaseStatus::kFailed, state_.stop_reason);
    return Ok();
  }
  if (state_.baseline_values.empty()) {
    EndPhase(PhaseStatus::kFailed, "no baseline");
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
    Event("roofline", {{"summary", state_.roofline}});
    Progress("roofline " + state_.roofline);
  }
  if (spec_.accuracy.enabled) {
    auto acc = services_.executor->PrepareAccuracy(state_.stock);
    if (!acc) {
      if (acc.error().code == ErrorCode::kCancelled) return acc;
      state_.close_accuracy = "accuracy reference unavailable: " + acc.error().message;
      Progress(state_.close_accuracy);
    }
  }
  HONE_TRY(JudgeReplay());
  EndPhase(PhaseStatus::kDone, "");
  return Ok();
}

// ---- framework, kernel, sweep ----

Status Coordinator::TryPatches() {
  if (!services_.patches) return Ok();
  for (const PatchIdea& idea : services_.patches->Pending(state_)) {
    if (Stopping() || !CanAfford(1 + 2 * spec_.measurement.min_pairs)) break;
    search::Candidate cand{"patch:" + idea.id, idea.title, Config{}, "source patch " + idea.id, 0};
    CandidateRecord& c = NewCandidate(CandidatePhase::kFramework, cand, state_.best);
    c.patch = idea.id;
    const std::string cid = c.id;
    HONE_TRY(Save());
    // The lane commits only what the measurement keeps; the verdict stands once the
    // lane has answered (an uncommitted KEEP is not kept).
    std::optional<Evidence> evidence;
    Status measured = Ok();
    auto result = services_.patches->Try(idea, [&](const std::string& binary) -> Result<bool> {
      CandidateRecord* rec = FindCandidate(cid);
      rec->server_binary = binary;
      evidence.emplace();
      measured = Assess(*rec, *evidence);
      HONE_TRY(measured);
      return evidence->Decided().verdict == Verdict::kKeep;
    });
    // Interrupted: the candidate stays pending (a resumed Framework closes it).
    if (!measured && measured.error().code == ErrorCode::kCancelled) return measured;
    if (!result && result.error().code == ErrorCode::kCancelled) return Fail(result.error());
    CandidateRecord* rec = FindCandidate(cid);
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
        e.vetoes.push_back({result->status == PatchStatus::kBuildFailed ? VetoKind::kBuildFailed : VetoKind::kPatchRejected,
                            reason});
      } else if (!kept) {
        e.vetoes.push_back({VetoKind::kNotCommitted, result->reason});
      }
    }
    HONE_TRY(Finish(*rec, e.Decided()));
    Event("patch", {{"candidate", rec->id}, {"patch", idea.id}, {"verdict", std::string(VerdictName(rec->verdict))},
                    {"reason", rec->reason}});
    HONE_TRY(Save());
  }
  return Ok();
}

Status Coordinator::Framework() {
  StartPhase(Phase::kFramework);
  if (CandidateRecord* pending = state_.Pending(); pending && pending->patch.empty()) HONE_TRY(Evaluate(*pending));
  if (CandidateRecord* pending = state_.Pending(); pending && !pending->patch.empty()) {
    // Interrupted mid-patch: its worktree was reset; not retried.
    HONE_TRY(Finish(*pending, Decide(std::nullopt, {{VetoKind::kInterrupted,
                                                     "interrupted while the patch was being measured"}})));
  }
  HONE_TRY(TryPatches());
  int misses = 0;
  const int plateau = 8;
  std::string note;
  while (true) {
    if (Stopping()) {
      note = sys::InterruptRequested() ? "interrupted" : "trial limit reached";
      break;
    }
    // A candidate needs a screen, min_pairs pairs and maybe more: do not start one
    // that cannot finish its first look.
    int needed = 1 + 2 * spec_.measurement.min_pairs;
    int sweep_points = std::max<int>(1, static_cast<int>(spec_.workload.sweep_concurrency.size())) *
                       std::max<int>(1, static_cast<int>(spec_.workload.sweep_isl_osl.size()));
    bool has_sweep = !spec_.workload.sweep_concurrency.empty() || !spec_.workload.sweep_isl_osl.empty();
    int sweep_reserve = has_sweep ? sweep_points * 2 * spec_.measurement.min_pairs : 0;
    if (!CanAfford(needed + sweep_reserve)) {
      note = "budget";
      break;
    }
    if (misses >= plateau) {
      note = "plateau: " + std::to_string(plateau) + " candidates without a KEEP";
      break;
    }
    search::ProposalContext ctx;
    ctx.stock = state_.stock;
    ctx.best = state_.best;
    for (const auto& c : state_.candidates) ctx.tried.insert(c.config.Hash());
    ctx.tried.insert(state_.stock.Hash());
    ctx.cycle = state_.cycle;
    ctx.time_left_s = Left();
    ctx.concurrency = spec_.workload.concurrency;
    ctx.cpus = services_.cpus;
    ctx.gpu = services_.gpu;
    // Evidence for the planner: how far below the roofline the stock runs, what binds
    // it, its bench metrics and the noise one measured gain carries.
    // (A ratio above 1 means the bound's inputs are wrong: no evidence then.)
    if (state_.roofline_ratio > 0 && state_.roofline_ratio <= 1.0) ctx.headroom = state_.roofline_ratio;
    ctx.bottleneck = state_.roofline_bound;
    ctx.baseline_metrics = state_.baseline_metrics;
    ctx.baseline_metrics["concurrency"] = spec_.workload.concurrency;
    if (spec_.workload.osl > 0) ctx.baseline_metrics["osl"] = static_cast<double>(spec_.workload.osl);
    if (state_.noise_floor > 0) ctx.noise_floor = state_.noise_floor;
    auto idea = services_.proposer ? services_.proposer->Next(ctx) : std::nullopt;
    if (!idea) {
      note = "no more ideas";
      break;
    }
    CandidateRecord& c = NewCandidate(CandidatePhase::kFramework, *idea, state_.best);
    HONE_TRY(Save());
    HONE_TRY(Evaluate(c));
    misses = c.verdict == Verdict::kKeep ? 0 : misses + 1;
  }
  EndPhase(PhaseStatus::kDone, note);
  return Ok();
}

Status Coordinator::Kernel() {
  StartPhase(Phase::kKernel);
  if (!services_.kernel) {
    EndPhase(PhaseStatus::kSkipped, "no kernel backend configured (kernel.backend in the spec)");
    return Ok();
  }
  std::string note;
  auto proposed = services_.kernel->Propose(state_, &note);
  if (!proposed) {
    state_.kernel = "kernel backend failed: " + proposed.error().message;
    EndPhase(PhaseStatus::kFailed, state_.kernel);
    return Ok();
  }
  state_.kernel = note;
  Event("kernel_backend", {{"note", note}});
  for (const search::Candidate& idea : *proposed) {
    if (Stopping() || !CanAfford(1 + 2 * spec_.measurement.min_pairs)) break;
    CandidateRecord& c = NewCandidate(CandidatePhase::kKernel, idea, state_.best);
    HONE_TRY(Evaluate(c));
  }
  EndPhase(PhaseStatus::kDone, proposed->empty() ? note : "");
  return Ok();
}

Status Coordinator::Sweep() {
  StartPhase(Phase::kSweep);
  if (spec_.workload.sweep_concurrency.empty() && spec_.workload.sweep_isl_osl.empty()) {
    EndPhase(PhaseStatus::kSkipped, "no sweep grid in the spec (workload.sweep)");
    return Ok();
  }
  if (state_.BestIsStock()) {
    EndPhase(PhaseStatus::kSkipped, "best is the stock configuration: nothing to sweep");
    return Ok();
  }
  if (state_.last_sweep_config == state_.best.Hash() + state_.server_binary) {
    EndPhase(PhaseStatus::kSkipped, "nothing changed since the previous sweep");
    return Ok();
  }
  std::vector<int> concs = spec_.workload.sweep_concurrency;
  if (concs.empty()) concs.push_back(spec_.workload.concurrency);
  auto lens = spec_.workload.sweep_isl_osl;
  if (lens.empty()) lens.emplace_back(spec_.workload.isl, spec_.workload.osl);
  std::vector<measure::OperatingPoint> points;
  for (int conc : concs) {
    for (auto [isl, osl] : lens) points.push_back({conc, isl, osl});
  }
  state_.sweep.clear();
  for (const measure::OperatingPoint& p : points) {
    if (Stopping() || !CanAfford(2 * spec_.measurement.min_pairs)) break;
    SweepPointRecord rec;
    rec.concurrency = p.concurrency;
    rec.isl = p.isl;
    rec.osl = p.osl;
    std::vector<double> a, b;
    double a_intvty = 0, b_intvty = 0, a_tps = 0, b_tps = 0;
    PairPlan plan;
    plan.a = {TrialRole::kSweep, state_.stock, ""};
    plan.b = {TrialRole::kSweep, state_.best, state_.server_binary};
    plan.point = p;
    plan.min_pairs = plan.max_pairs = spec_.measurement.min_pairs;
    plan.judge = VerdictSettings(1);
    plan.on_trial = [&](const measure::TrialOutcome& o, bool b_arm) {
      (b_arm ? b_tps : a_tps) += o.result.total_tps;
      (b_arm ? b_intvty : a_intvty) += o.result.intvty.count("p50") ? o.result.intvty.at("p50") : 0;
    };
    PairLog log(rec.stock_trials, a, rec.best_trials, b);
    HONE_ASSIGN_OR_RETURN(ComparisonResult r, RunComparison(*this, plan, log));
    switch (r.end) {
      case ComparisonEnd::kComplete: {
        double n = static_cast<double>(log.pairs());
        rec.stock_objective = Mean(log.a());
        rec.best_objective = Mean(log.b());
        rec.stock_tps = a_tps / n;
        rec.best_tps = b_tps / n;
        rec.stock_intvty = a_intvty / n;
        rec.best_intvty = b_intvty / n;
        rec.verdict = r.judged->verdict;
        rec.best_config = r.judged->verdict == Verdict::kKeep ? state_.best.ToString() : state_.stock.ToString();
        break;
      }
      case ComparisonEnd::kBudget: rec.verdict = Verdict::kSkippedBudget; break;
      case ComparisonEnd::kFailedA:
      case ComparisonEnd::kFailedB:
      case ComparisonEnd::kSloViolated: rec.verdict = Verdict::kInvalid; break;
    }
    state_.sweep.push_back(rec);
    Event("sweep_point", {{"point", p.Label()}, {"verdict", std::string(VerdictName(*rec.verdict))},
                          {"stock", Fmt("%.5g", rec.stock_objective)}, {"best", Fmt("%.5g", rec.best_objective)}});
    HONE_TRY(Save());
  }
  state_.last_sweep_config = state_.best.Hash() + state_.server_binary;
  EndPhase(PhaseStatus::kDone, std::to_string(state_.sweep.size()) + " operating points");
  return Ok();
}

// ---- close ----

Status Coordinator::CloseSession() {
  StartPhase(Phase::kClose);
  if (state_.stop_reason.empty()) state_.stop_reason = sys::InterruptRequested() ? "interrupted" : "completed";
  if (sys::InterruptRequested()) state_.interrupted = true;
  // Final end-to-end re-validation of the best configuration against the stock one:
  // sequential like a candidate's (min_pairs pairs, more while inconclusive, up to
  // max_pairs); out of budget or interrupted after the minimum, what was measured is
  // judged. Three pairs on a noisy host give intervals too wide to admit a real gain.
  if (!state_.BestIsStock() && !state_.validated && !state_.interrupted && !state_.baseline_values.empty()) {
    const auto& m = spec_.measurement;
    std::vector<std::string> a_trials, b_trials;
    std::vector<double> a, b;
    double best_total = 0, best_output = 0;
    PairPlan plan;
    plan.a = {TrialRole::kValidate, state_.stock, ""};
    plan.b = {TrialRole::kValidate, state_.best, state_.server_binary};
    plan.point = Primary();
    plan.min_pairs = m.min_pairs;
    plan.max_pairs = m.max_pairs;
    plan.pair_step = m.pair_step;
    plan.judge = VerdictSettings(PlannedLooks());
    plan.label = "close validation";
    plan.on_trial = [&](const measure::TrialOutcome& o, bool b_arm) {
      if (!b_arm) return;
      best_total += o.result.total_tps;
      best_output += o.result.output_tps;
    };
    PairLog log(a_trials, a, b_trials, b);
    (void)RunComparison(*this, plan, log);  // an error (an interrupt) leaves what was measured
    state_.validation_trials = log.Interleaved();
    if (log.pairs() >= m.min_pairs) {
      measure::VerdictResult r = JudgePairs(plan, log);
      state_.validated = true;
      state_.validated_gain = r.gain;
      state_.validated_lo = r.ratio.lo;
      state_.validated_hi = r.ratio.hi;
      state_.validated_stock_objective = Mean(log.a());
      state_.validated_best_objective = Mean(log.b());
      state_.validation_verdict = r.verdict;
      Progress("validated end to end: " + Fmt("%+.1f%%", r.gain * 100) + " [" + Fmt("%.3f", r.ratio.lo) + ", " +
               Fmt("%.3f", r.ratio.hi) + "] " + std::string(VerdictName(r.verdict)) + " after " +
               std::to_string(log.pairs()) + " pairs");
      if (services_.roofline) {
        double n = static_cast<double>(log.pairs());
        auto note = services_.roofline(state_.best, best_total / n, best_output / n);
        if (note) state_.roofline += (state_.roofline.empty() ? "" : "; ") + std::string("best: ") + note->summary;
      }
      if (spec_.accuracy.enabled && state_.close_accuracy.empty()) {
        auto acc = services_.executor->CheckAccuracy(state_.best, "close", state_.server_binary);
        if (acc) state_.close_accuracy = (acc->passed ? "pass: " : "FAIL: ") + acc->detail;
      }
    } else {
      state_.validation_verdict = Verdict::kNotValidated;
      Progress("the best configuration could not be re-validated at close (budget or interrupt)");
    }
    HONE_TRY(Save());
  }
  Event("stop", {{"reason", state_.stop_reason}});
  EndPhase(PhaseStatus::kDone, state_.stop_reason);
  HONE_TRY(Save());
  // The report and the recipe come last, so that they show the closed session; the
  // session is "done" only once they are written (a crash here re-runs the close).
  if (services_.closer) {
    auto closed = services_.closer->Close(state_);
    if (!closed) Event("close_error", {{"error", closed.error().message}});
  }
  state_.phase = Phase::kDone;
  return Save();
}

// ---- the phase sequence ----

Result<SessionState> Coordinator::Run() {
  HONE_TRY(sys::EnsureDir(state_.run_dir));
  if (services_.proposer && !state_.search_state.empty()) HONE_TRY(services_.proposer->Load(state_.search_state));
  if (state_.trials_run == 0 && state_.phases.empty()) {
    Event("session_started", {{"session", state_.session_id}, {"budget_s", Fmt("%.0f", spec_.budget.wall_s)},
                              {"objective", spec_.objective.metric}});
  } else {
    Event("resumed", {{"trials_run", std::to_string(state_.trials_run)}});
    Progress("resuming " + state_.session_id + " in phase " + std::string(PhaseName(state_.phase)) + " after " +
             std::to_string(state_.trials_run) + " trials");
  }
  HONE_TRY(Save());
  // One wrapper per phase: a failed phase is recorded and the session moves on.
  auto guarded = [&](Status (Coordinator::*phase)()) -> bool {
    Status s = (this->*phase)();
    if (s) return true;
    if (s.error().code == ErrorCode::kCancelled || sys::InterruptRequested()) {
      state_.interrupted = true;
      state_.stop_reason = "interrupted";
      EndPhase(PhaseStatus::kInterrupted, "");
      return false;
    }
    EndPhase(PhaseStatus::kFailed, s.error().message);
    Event("phase_error", {{"error", s.error().ToString()}});
    return true;
  };
  bool running = true;
  while (running && state_.stop_reason.empty() && !sys::InterruptRequested()) {
    switch (state_.phase) {
      case Phase::kPrelude:
        running = guarded(&Coordinator::Prelude) && state_.stop_reason.empty();
        if (running) state_.phase = Phase::kFramework;
        break;
      case Phase::kFramework:
        running = guarded(&Coordinator::Framework);
        if (running) state_.phase = Phase::kKernel;
        break;
      case Phase::kKernel:
        running = guarded(&Coordinator::Kernel);
        if (running) state_.phase = Phase::kSweep;
        break;
      case Phase::kSweep: {
        if (!(running = guarded(&Coordinator::Sweep))) break;
        // Cycle or close: only while budget, gains and cycles remain.
        const bool gained = KeepsThisCycle() > 0;
        const bool budget = CanAfford(1 + 2 * spec_.measurement.min_pairs);
        if (state_.cycle < spec_.budget.max_cycles && gained && budget && !Stopping() && !state_.roofline_saturated) {
          ++state_.cycle;
          state_.phase = Phase::kFramework;
          Event("cycle", {{"cycle", std::to_string(state_.cycle)}});
        } else {
          state_.stop_reason = Stopping()                                ? (sys::InterruptRequested() ? "interrupted" : "trial limit")
                               : !budget                                 ? "budget"
                               : state_.cycle >= spec_.budget.max_cycles ? "cycle ceiling reached"
                               : state_.roofline_saturated              ? "at the roofline: no headroom left"
                                                                        : "converged: the last cycle found no gain";
          state_.phase = Phase::kClose;
        }
        break;
      }
      case Phase::kClose:
      case Phase::kDone:
        running = false;
        break;
    }
    if (running) HONE_TRY(Save());
  }
  if (state_.phase != Phase::kDone) HONE_TRY(CloseSession());
  return state_;
}

std::string StatusText(const SessionState& s, const std::vector<Event>& events, double now_unix_s) {
  char buf[512];
  double started = static_cast<double>(s.started_unix_us) * 1e-6;
  std::string out;
  std::snprintf(buf, sizeof buf, "session %s: phase %s (cycle %d), %d trials, %.0fs elapsed, %.0fs of budget left\n",
                s.session_id.c_str(), std::string(PhaseName(s.phase)).c_str(), s.cycle, s.trials_run,
                now_unix_s - started, std::max(0.0, s.deadline_unix_s - now_unix_s));
  out += buf;
  if (!s.baseline_values.empty()) {
    std::snprintf(buf, sizeof buf, "baseline %.4g (trials %s), noise floor %.2f%%\n", s.baseline_objective,
                  Join(s.baseline_trials, ",").c_str(), s.noise_floor * 100);
    out += buf;
  }
  int keeps = 0;
  for (const auto& c : s.candidates) keeps += c.verdict == Verdict::kKeep;
  std::snprintf(buf, sizeof buf, "best %s (%d kept of %zu candidates)\n", s.best.ToString().c_str(), keeps,
                s.candidates.size());
  out += buf;
  if (s.validated) {
    std::snprintf(buf, sizeof buf, "validated gain %+.1f%% [%.3f, %.3f] (%s)\n", s.validated_gain * 100,
                  s.validated_lo, s.validated_hi,
                  s.validation_verdict ? std::string(VerdictName(*s.validation_verdict)).c_str() : "");
    out += buf;
  }
  if (!s.stop_reason.empty()) out += "stop reason: " + s.stop_reason + "\n";
  if (!events.empty()) {
    const Event& e = events.back();
    std::snprintf(buf, sizeof buf, "last event: %s at %.0fs\n", e.type.c_str(), e.t);
    out += buf;
  }
  return out;
}

}  // namespace hone::session
