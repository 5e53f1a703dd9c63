#include "session/coordinator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <optional>

#include "core/rng.h"
#include "core/stats.h"
#include "core/strings.h"
#include "sys/files.h"
#include "sys/signals.h"

namespace hone::session {

namespace fs = std::filesystem;

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
  fields.insert(fields.begin(), {"phase", state_.phase});
  if (auto s = events_.Append(type, Now(), fields); !s && !event_error_shown_) {
    event_error_shown_ = true;  // once: a full disk fails every append
    Progress("warning: the event log lost an event: " + s.error().message);
  }
}

void Coordinator::Progress(const std::string& line) {
  if (services_.progress) services_.progress(line);
}

void Coordinator::StartPhase(const std::string& phase) {
  state_.phase = phase;
  // A resumed phase continues its open record.
  if (!state_.phases.empty() && state_.phases.back().phase == phase && state_.phases.back().cycle == state_.cycle &&
      state_.phases.back().status == "running") {
    return;
  }
  state_.phases.push_back({phase, state_.cycle, Now(), -1, "running", ""});
  Event("phase_started", {{"cycle", std::to_string(state_.cycle)}});
  Progress("phase " + phase + " (cycle " + std::to_string(state_.cycle) + ")");
}

void Coordinator::EndPhase(const std::string& status, const std::string& note) {
  if (!state_.phases.empty() && state_.phases.back().status == "running") {
    state_.phases.back().finished_s = Now();
    state_.phases.back().status = status;
    state_.phases.back().note = note;
  }
  Event("phase_finished", {{"status", status}, {"note", note}});
  if (!note.empty()) Progress(state_.phase + ": " + status + " (" + note + ")");
}

Result<measure::TrialOutcome> Coordinator::RunTrial(const std::string& role, const Config& config,
                                                    const measure::OperatingPoint& p, const std::string& server_binary) {
  HONE_ASSIGN_OR_RETURN(measure::TrialOutcome o, RunTrialOnce(role, config, p, server_binary, ""));
  // A faulted trial (the server or the transport misbehaved) measured nothing about
  // its configuration: it is run once more, and a second fault stands (an invalid
  // trial for the caller). The warm-up is discarded anyway.
  if (o.launched && !o.faults.empty() && role != "warmup") {
    Event("trial_retry", {{"trial", o.id}, {"faults", Join(o.faults, ", ")}});
    Progress("  " + o.id + " faulted (" + Join(o.faults, ", ") + "): measuring it again");
    return RunTrialOnce(role, config, p, server_binary, o.id);
  }
  return o;
}

Result<measure::TrialOutcome> Coordinator::RunTrialOnce(const std::string& role, const Config& config,
                                                        const measure::OperatingPoint& p,
                                                        const std::string& server_binary, const std::string& retry_of) {
  if (sys::InterruptRequested()) return Cancelled("interrupted");
  measure::TrialRequest req{NextTrialId(), role, config, p, server_binary, retry_of};
  // Persist the id before the trial: a crash mid-trial never reuses it.
  HONE_TRY(Save());
  Event("trial_started", {{"trial", req.id}, {"role", role}, {"config", config.ToString()}, {"point", p.Label()}});
  Progress("trial " + req.id + " " + role + " " + config.ToString());
  HONE_ASSIGN_OR_RETURN(measure::TrialOutcome o, services_.executor->Run(req));
  ++state_.trials_run;
  state_.trial_seconds_total += o.wall_s;
  std::string status = !o.launched          ? "launch_failed:" + o.failure_kind
                       : !o.faults.empty() ? "faulted"
                       : !o.valid          ? "invalid"
                                           : "ok";
  Event("trial_finished", {{"trial", o.id}, {"status", status}, {"objective", Fmt("%.6g", o.objective)},
                           {"wall_s", Fmt("%.2f", o.wall_s)}});
  if (o.launched && o.valid) {
    Progress("  " + o.id + " " + spec_.objective.metric + " = " + Fmt("%.4g", o.objective));
  } else {
    Progress("  " + o.id + " " + status + (o.failure_detail.empty() ? "" : ": " + o.failure_detail.substr(0, 160)));
  }
  return o;
}

CandidateRecord& Coordinator::NewCandidate(const std::string& phase, const search::Candidate& idea,
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

measure::VerdictInput Coordinator::PairedInput(std::vector<double> a, std::vector<double> b, int looks) const {
  measure::VerdictInput in{std::move(a),       std::move(b),      spec_.objective.maximize, spec_.measurement.min_gain,
                           state_.noise_floor, spec_.measurement.confidence};
  in.looks = looks;
  return in;
}

int Coordinator::PlannedLooks() const {
  const auto& m = spec_.measurement;
  return (m.max_pairs - m.min_pairs) / m.pair_step + 1;
}

Status Coordinator::Judge(CandidateRecord& c, bool final_look) {
  // Whole pairs only: a resumed run may hold an incumbent trial whose twin never ran.
  const auto n = static_cast<long>(std::min(c.incumbent_values.size(), c.candidate_values.size()));
  measure::VerdictInput in =
      PairedInput({c.incumbent_values.begin(), c.incumbent_values.begin() + n},
                  {c.candidate_values.begin(), c.candidate_values.begin() + n}, PlannedLooks());
  in.seed = static_cast<uint64_t>(state_.next_candidate);
  measure::VerdictResult r = measure::Judge(in);
  c.gain = r.gain;
  c.ci_lo = r.ratio.lo;
  c.ci_hi = r.ratio.hi;
  c.threshold = r.threshold;
  c.pairs = r.pairs;
  c.reason = r.reason;
  if (r.verdict == measure::Verdict::kInconclusive && !final_look) return Ok();  // more pairs
  c.verdict = std::string(measure::VerdictName(r.verdict));
  return Ok();
}

Status Coordinator::Evaluate(CandidateRecord& c) {
  const measure::OperatingPoint point = Primary();
  // Screening: one unpaired trial drops clear losers and launch failures cheaply.
  if (spec_.measurement.screen && c.screen_trial.empty() && c.candidate_values.empty()) {
    if (!CanAfford(1)) return Finish(c, "SKIPPED_BUDGET", "not enough budget left to measure it");
    HONE_ASSIGN_OR_RETURN(measure::TrialOutcome o, RunTrial("screen", c.config, point, c.server_binary));
    c.screen_trial = o.id;
    if (!o.launched) {
      c.failure_kind = o.failure_kind;
      return Finish(c, "LAUNCH_FAILED", o.failure_kind + ": " + o.failure_detail.substr(0, 200));
    }
    if (!o.valid) {
      return Finish(c, "INVALID", o.invalid_reasons.empty() ? "invalid run" : o.invalid_reasons[0]);
    }
    if (!state_.best_values.empty()) {
      double ref = Mean(state_.best_values);
      double better = Better(o.objective, ref, spec_.objective.maximize);
      if (better < -spec_.measurement.screen_drop) {
        c.gain = better;
        char buf[160];
        std::snprintf(buf, sizeof buf, "screening trial %.1f%% worse than the incumbent's mean (drop at %.0f%%)",
                      -better * 100, spec_.measurement.screen_drop * 100);
        return Finish(c, "SCREENED_OUT", buf);
      }
    }
    HONE_TRY(Save());
  }
  // Accuracy first for changes that can alter outputs: a failure costs no pairs.
  // A source patch is new code: always accuracy-checked before pairs.
  const bool risky = !c.patch.empty() || (services_.risky && services_.risky(c.delta));
  if (risky && c.accuracy.empty() && spec_.accuracy.enabled) {
    HONE_ASSIGN_OR_RETURN(measure::AccuracyOutcome a,
                          services_.executor->CheckAccuracy(c.config, c.id, c.server_binary));
    c.accuracy = a.detail;
    c.accuracy_passed = a.passed;
    Event("accuracy", {{"candidate", c.id}, {"passed", a.passed ? "true" : "false"}, {"detail", a.detail}});
    Progress("  accuracy " + std::string(a.passed ? "pass" : "FAIL") + ": " + a.detail);
    if (!a.passed) return Finish(c, "ACCURACY_FAILED", "accuracy gate: " + a.detail);
    HONE_TRY(Save());
  }
  // Paired, interleaved trials: incumbent (A) then candidate (B).
  const auto& m = spec_.measurement;
  int target = std::max(m.min_pairs, static_cast<int>(c.candidate_values.size()));
  if (target > m.min_pairs) target = m.min_pairs + ((target - m.min_pairs + m.pair_step - 1) / m.pair_step) * m.pair_step;
  while (true) {
    while (static_cast<int>(c.candidate_values.size()) < target) {
      if (!CanAfford(2)) {
        if (static_cast<int>(c.candidate_values.size()) >= m.min_pairs) {
          HONE_TRY(Judge(c, true));
          if (c.verdict == "PENDING") c.verdict = "INCONCLUSIVE";
          return Finish(c, c.verdict, c.reason + " (budget: no more pairs)");
        }
        return Finish(c, "SKIPPED_BUDGET", "not enough budget left for paired trials");
      }
      // An A whose B is missing (resumed after a crash) is reused.
      if (c.incumbent_values.size() == c.candidate_values.size()) {
        HONE_ASSIGN_OR_RETURN(measure::TrialOutcome a, RunTrial("incumbent", c.incumbent, point, c.incumbent_binary));
        if (!a.launched || !a.valid) {
          return Finish(c, "INVALID", "the incumbent's trial " + a.id + " failed (" +
                                       (a.launched ? std::string("invalid run") : a.failure_kind) + ")");
        }
        c.incumbent_trials.push_back(a.id);
        c.incumbent_values.push_back(a.objective);
        HONE_TRY(Save());
      }
      HONE_ASSIGN_OR_RETURN(measure::TrialOutcome b, RunTrial("candidate", c.config, point, c.server_binary));
      if (!b.launched) {
        c.failure_kind = b.failure_kind;
        return Finish(c, "LAUNCH_FAILED", b.failure_kind + ": " + b.failure_detail.substr(0, 200));
      }
      if (!b.valid) return Finish(c, "INVALID", b.invalid_reasons.empty() ? "invalid run" : b.invalid_reasons[0]);
      if (!b.slo_ok) {
        c.candidate_trials.push_back(b.id);
        c.candidate_values.push_back(b.objective);
        return Finish(c, "REVERT", "SLO violated: " + (b.slo_violations.empty() ? "" : b.slo_violations[0]));
      }
      c.candidate_trials.push_back(b.id);
      c.candidate_values.push_back(b.objective);
      HONE_TRY(Save());
    }
    bool final_look = target >= m.max_pairs;
    HONE_TRY(Judge(c, final_look));
    if (c.verdict == "PENDING") {
      target = std::min(m.max_pairs, target + m.pair_step);
      HONE_TRY(Save());
      continue;
    }
    break;
  }
  if (services_.critic && c.critic.empty()) {
    auto review = services_.critic(c);
    if (review) {
      c.critic = std::string(review->approve ? "approved" : "refused") + ": " + review->reason +
                 (review->learning.empty() ? "" : " (learning: " + review->learning + ")");
      Event("critic", {{"candidate", c.id}, {"approve", review->approve ? "true" : "false"},
                       {"reason", review->reason}, {"signature", review->signature}});
      if (!review->approve && c.verdict == "KEEP") {
        return Finish(c, "REVERT", "measured KEEP (" + c.reason + ") but the critic refused: " + review->reason);
      }
    } else {
      c.critic = "no review: " + review.error().message;
    }
  }
  if (c.verdict == "KEEP" && spec_.accuracy.enabled && c.accuracy.empty()) {
    HONE_ASSIGN_OR_RETURN(measure::AccuracyOutcome a, services_.executor->CheckAccuracy(c.config, c.id, c.server_binary));
    c.accuracy = a.detail;
    c.accuracy_passed = a.passed;
    Event("accuracy", {{"candidate", c.id}, {"passed", a.passed ? "true" : "false"}, {"detail", a.detail}});
    if (!a.passed) return Finish(c, "ACCURACY_FAILED", "faster but the accuracy gate failed: " + a.detail);
  }
  return Finish(c, c.verdict, "");
}

Status Coordinator::Enable(const measure::TrialOutcome& failed) {
  // Enablement ladder: from least to most invasive, as data (data/enablement.yaml).
  std::vector<Config> rungs = services_.enablement ? services_.enablement(failed.failure_kind) : std::vector<Config>{};
  Event("enablement", {{"failure_kind", failed.failure_kind}, {"rungs", std::to_string(rungs.size())}});
  Progress("stock configuration failed (" + failed.failure_kind + "): trying " + std::to_string(rungs.size()) +
           " enablement rungs");
  for (const Config& rung : rungs) {
    if (!CanAfford(1) || Stopping()) break;
    Config attempt = state_.stock.Merged(rung);
    HONE_ASSIGN_OR_RETURN(measure::TrialOutcome o, RunTrial("enablement", attempt, Primary()));
    search::Candidate idea{"enable:" + rung.ToString(), "enablement", rung, "make the stock configuration launch", 0};
    CandidateRecord& c = NewCandidate("enablement", idea, state_.stock);
    c.candidate_trials.push_back(o.id);
    c.finished_s = Now();
    if (o.launched && o.valid) {
      c.verdict = "KEEP";
      c.reason = "launches (" + failed.failure_kind + " fixed by " + rung.ToString() + ")";
      state_.stock = attempt;
      state_.best = attempt;
      state_.stock_note = "enabled with " + rung.ToString() + " after " + failed.failure_kind;
      Event("verdict", {{"candidate", c.id}, {"verdict", "KEEP"}, {"reason", c.reason}});
      return Save();
    }
    c.verdict = "LAUNCH_FAILED";
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
    if (c.phase == "prelude") return &c;
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
  NewCandidate("prelude", idea, state_.stock);
  Progress("replaying recipe " + std::to_string(warm->recipe_id) + " alongside the baseline");
  return Save();
}

// A candidate's verdict is final: record it, log it, adopt a KEEP as the new best, and
// tell the proposer. Shared by the search's evaluations and the warm replay.
Status Coordinator::Finish(CandidateRecord& c, const std::string& verdict, const std::string& reason) {
  c.verdict = verdict;
  if (!reason.empty()) c.reason = reason;
  c.finished_s = Now();
  Event("verdict", {{"candidate", c.id}, {"verdict", c.verdict}, {"gain", Fmt("%.5f", c.gain)},
                    {"ci_lo", Fmt("%.5f", c.ci_lo)}, {"ci_hi", Fmt("%.5f", c.ci_hi)}, {"reason", c.reason}});
  Progress("  " + c.id + " " + c.verdict + ": " + c.reason);
  if (c.verdict == "KEEP") {
    state_.best = c.config;
    state_.server_binary = c.server_binary;
    state_.best_trials = c.candidate_trials;
    state_.best_values = c.candidate_values;
    ++keeps_this_cycle_;
  }
  Observe(c);
  return Save();
}

Status Coordinator::RunReplayTrial(CandidateRecord& r) {
  const std::string rid = r.id;
  HONE_ASSIGN_OR_RETURN(measure::TrialOutcome b, RunTrial("replay", r.config, Primary(), r.server_binary));
  CandidateRecord* c = ReplayCandidate();  // RunTrial does not add records, but be safe
  if (!c || c->id != rid) return Ok();
  if (!b.launched) {
    c->failure_kind = b.failure_kind;
    return Finish(*c, "LAUNCH_FAILED", b.failure_kind + ": " + b.failure_detail.substr(0, 200));
  }
  if (!b.valid) return Finish(*c, "INVALID", b.invalid_reasons.empty() ? "invalid run" : b.invalid_reasons[0]);
  // Paired with the baseline trial just before it.
  c->incumbent_trials.push_back(state_.baseline_trials.back());
  c->incumbent_values.push_back(state_.baseline_values.back());
  c->candidate_trials.push_back(b.id);
  c->candidate_values.push_back(b.objective);
  if (!b.slo_ok) return Finish(*c, "REVERT", "SLO violated: " + (b.slo_violations.empty() ? "" : b.slo_violations[0]));
  return Save();
}

Status Coordinator::Prelude() {
  StartPhase("prelude");
  // One discarded launch first: the model file enters the page cache and lazy
  // initialisation happens outside the measurements (and a stock config that does not
  // launch is found before anything else).
  if (state_.warmup_trial.empty() && state_.baseline_values.empty()) {
    if (!CanAfford(1)) {
      state_.stop_reason = "budget too small to measure the stock baseline";
      EndPhase("failed", state_.stop_reason);
      return Ok();
    }
    HONE_ASSIGN_OR_RETURN(measure::TrialOutcome w, RunTrial("warmup", state_.stock, Primary()));
    if (!w.launched) {
      auto enabled = Enable(w);
      if (!enabled) {
        state_.stop_reason = enabled.error().message;
        EndPhase("failed", state_.stop_reason);
        return Ok();
      }
    }
    state_.warmup_trial = w.id;
    HONE_TRY(Save());
  }
  int aa = spec_.measurement.aa_pairs;
  // Stock baseline, interleaved with its A/A twin: A1 A2 A1 A2 ... When the knowledge
  // base has a recipe, its replay (B) rides along: A1 B A2 A1 B A2 ..., each B paired
  // with the A1 before it, so a warm session judges the recipe on the baseline's own
  // trials instead of measuring the stock twice more for it.
  while (static_cast<int>(state_.aa_trials.size()) < aa) {
    if (!CanAfford(2)) {
      if (state_.baseline_values.empty()) {
        state_.stop_reason = "budget too small to measure the stock baseline";
        EndPhase("failed", state_.stop_reason);
        return Ok();
      }
      break;
    }
    bool first = state_.baseline_trials.size() == state_.aa_trials.size();
    if (!first) {
      HONE_TRY(MatchWarmRecipe());
      CandidateRecord* r = ReplayCandidate();
      if (r && r->verdict == "PENDING" && r->candidate_values.size() < state_.baseline_trials.size()) {
        HONE_TRY(RunReplayTrial(*r));
        continue;
      }
    }
    HONE_ASSIGN_OR_RETURN(measure::TrialOutcome o, RunTrial(first ? "baseline" : "aa", state_.stock, Primary()));
    if (!o.launched || !o.valid) {
      if (!o.launched && state_.baseline_values.empty()) {
        auto enabled = Enable(o);
        if (!enabled) {
          state_.stop_reason = enabled.error().message;
          EndPhase("failed", state_.stop_reason);
          return Ok();
        }
        continue;  // measure the enabled stock configuration
      }
      const std::string why = o.launched ? (o.invalid_reasons.empty() ? "invalid" : o.invalid_reasons[0]) : o.failure_kind;
      // A stock configuration that already ran is not broken: one failure on a busy
      // host (a timed-out request, a slow start) is measured again before giving up.
      if (!state_.baseline_values.empty() && ++stock_failures_ <= 1) {
        Event("stock_trial_failed", {{"trial", o.id}, {"reason", why}});
        Progress("the stock configuration's trial " + o.id + " failed (" + why + "): measuring it again");
        continue;
      }
      state_.stop_reason = "the stock configuration's trial " + o.id + " failed: " + why;
      EndPhase("failed", state_.stop_reason);
      return Ok();
    }
    if (first) {
      state_.baseline_trials.push_back(o.id);
      state_.baseline_values.push_back(o.objective);
    } else {
      state_.aa_trials.push_back(o.id);
      state_.aa_values.push_back(o.objective);
    }
    // Running means of the stock trials' throughput (for the roofline).
    double n = static_cast<double>(state_.baseline_trials.size() + state_.aa_trials.size());
    state_.baseline_total_tps += (o.result.total_tps - state_.baseline_total_tps) / n;
    state_.baseline_output_tps += (o.result.output_tps - state_.baseline_output_tps) / n;
    for (const char* name : {"mean_ttft_ms", "mean_tpot_ms", "kv_usage_max", "queue_depth_mean", "running_mean"}) {
      auto v = bench::Metric(o.result, name);
      if (!v) continue;
      auto [it, fresh] = state_.baseline_metrics.try_emplace(name, *v);
      if (!fresh) it->second += (*v - it->second) / n;
    }
    HONE_TRY(Save());
  }
  // A noisy machine gets up to two more A/A pairs before the floor is fixed (the cap is
  // fixed here: the loop below moves `aa` one pair at a time).
  const int aa_cap = spec_.measurement.aa_pairs + 2;
  while (!state_.baseline_values.empty() && state_.best_trials.empty() &&
         static_cast<int>(state_.aa_trials.size()) < aa_cap &&
         state_.aa_values.size() == state_.baseline_values.size() &&
         measure::NoiseFloor(state_.baseline_values, state_.aa_values) > 0.10 && CanAfford(2 + 2 * spec_.measurement.min_pairs)) {
    Progress("A/A pairs differ by " + Fmt("%.1f%%", measure::NoiseFloor(state_.baseline_values, state_.aa_values) * 100) +
             ": measuring another A/A pair");
    aa = static_cast<int>(state_.aa_trials.size()) + 1;
    while (static_cast<int>(state_.aa_trials.size()) < aa) {
      bool first = state_.baseline_trials.size() == state_.aa_trials.size();
      HONE_ASSIGN_OR_RETURN(measure::TrialOutcome o, RunTrial(first ? "baseline" : "aa", state_.stock, Primary()));
      if (!o.launched || !o.valid) break;
      if (first) {
        state_.baseline_trials.push_back(o.id);
        state_.baseline_values.push_back(o.objective);
      } else {
        state_.aa_trials.push_back(o.id);
        state_.aa_values.push_back(o.objective);
      }
      HONE_TRY(Save());
    }
    if (state_.aa_values.size() != state_.baseline_values.size()) break;
  }
  if (!state_.baseline_values.empty() && state_.best_trials.empty()) {
    const std::vector<double>& aa_values = state_.aa_values;
    size_t n = std::min(aa_values.size(), state_.baseline_values.size());
    state_.noise_floor = measure::NoiseFloor(std::vector<double>(state_.baseline_values.begin(), state_.baseline_values.begin() + static_cast<long>(n)),
                                             std::vector<double>(aa_values.begin(), aa_values.begin() + static_cast<long>(n)));
    std::vector<double> all = state_.baseline_values;
    all.insert(all.end(), aa_values.begin(), aa_values.end());
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
  if (state_.baseline_values.empty()) {
    EndPhase("failed", "no baseline");
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
  // The recipe's replay: judged on the pairs it shared with the baseline, extended with
  // ordinary pairs if those do not decide it.
  HONE_TRY(MatchWarmRecipe());
  if (CandidateRecord* r = ReplayCandidate(); r && state_.warm_replay.empty()) {
    if (r->verdict == "PENDING") HONE_TRY(Evaluate(*r));
    r = ReplayCandidate();  // Evaluate may have added records
    WarmCandidate warm;
    warm.config = r->config;
    warm.recorded_gain = r->predicted_gain;
    warm.explanation = r->rationale;
    warm.recipe_id = ParseInt(r->idea.substr(r->idea.rfind('-') + 1)).value_or(0);
    ReplayResult result{r->verdict,         r->gain,   r->verdict != "ACCURACY_FAILED",
                        r->candidate_trials, r->reason, state_.session_id};
    const std::string judged = services_.warm_start->RecordReplay(warm, result);
    char buf[160];
    std::snprintf(buf, sizeof buf, "recipe %lld replayed: %s, gain %+.1f%% vs recorded %+.1f%%",
                  static_cast<long long>(warm.recipe_id), r->verdict.c_str(), r->gain * 100,
                  warm.recorded_gain * 100);
    state_.warm_replay = std::string(buf) + " (" + judged + ")";
    Event("warm_replay", {{"result", state_.warm_replay}});
    HONE_TRY(Save());
  }
  EndPhase("done", "");
  return Ok();
}

Status Coordinator::TryPatches() {
  if (!services_.patches) return Ok();
  for (const PatchIdea& idea : services_.patches->Pending(state_)) {
    if (Stopping() || !CanAfford(1 + 2 * spec_.measurement.min_pairs)) break;
    search::Candidate cand{"patch:" + idea.id, idea.title, Config{}, "source patch " + idea.id, 0};
    CandidateRecord& c = NewCandidate("framework", cand, state_.best);
    c.patch = idea.id;
    const std::string cid = c.id;
    HONE_TRY(Save());
    auto result = services_.patches->Try(idea, [&](const std::string& binary) -> Result<bool> {
      CandidateRecord* rec = nullptr;
      for (auto& r : state_.candidates) {
        if (r.id == cid) rec = &r;
      }
      rec->server_binary = binary;
      HONE_TRY(Evaluate(*rec));
      return rec->verdict == "KEEP";
    });
    CandidateRecord* rec = nullptr;
    for (auto& r : state_.candidates) {
      if (r.id == cid) rec = &r;
    }
    if (!result) {
      if (result.error().code == ErrorCode::kCancelled) return Fail(result.error());
      if (rec->verdict == "PENDING") {
        rec->verdict = "PATCH_FAILED";
        rec->reason = result.error().message;
      }
    } else {
      if (result->status == "kept" && rec->verdict == "KEEP") {
        state_.server_binary = result->binary;  // the persistent copy, not the build dir
        rec->server_binary = result->binary;
      } else if (rec->verdict == "KEEP") {
        rec->verdict = "REVERT";  // measured faster, but the executor did not commit it
        rec->reason = "patch not committed: " + result->reason;
        state_.best = rec->incumbent;
        state_.server_binary = rec->incumbent_binary;
      } else if (rec->verdict == "PENDING") {
        rec->verdict = result->status == "build_failed" ? "BUILD_FAILED" : "PATCH_REJECTED";
        rec->reason = result->reason + (result->stopped_by.empty() ? "" : " [" + result->stopped_by + "]");
      }
      rec->rationale += (result->diffstat.empty() ? "" : " (" + result->diffstat + ")");
    }
    rec->finished_s = Now();
    Event("patch", {{"candidate", rec->id}, {"patch", idea.id}, {"verdict", rec->verdict}, {"reason", rec->reason}});
    HONE_TRY(Save());
  }
  return Ok();
}

Status Coordinator::Framework() {
  StartPhase("framework");
  keeps_this_cycle_ = 0;
  if (CandidateRecord* pending = state_.Pending(); pending && pending->patch.empty()) HONE_TRY(Evaluate(*pending));
  if (CandidateRecord* pending = state_.Pending(); pending && !pending->patch.empty()) {
    pending->verdict = "INCONCLUSIVE";  // interrupted mid-patch: its worktree was reset; not retried
    pending->reason = "interrupted while the patch was being measured";
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
    CandidateRecord& c = NewCandidate("framework", *idea, state_.best);
    HONE_TRY(Save());
    HONE_TRY(Evaluate(c));
    misses = c.verdict == "KEEP" ? 0 : misses + 1;
  }
  EndPhase("done", note);
  return Ok();
}

Status Coordinator::Kernel() {
  StartPhase("kernel");
  if (!services_.kernel) {
    EndPhase("skipped", "no kernel backend configured (kernel.backend in the spec)");
    return Ok();
  }
  std::string note;
  auto proposed = services_.kernel->Propose(state_, &note);
  if (!proposed) {
    state_.kernel = "kernel backend failed: " + proposed.error().message;
    EndPhase("failed", state_.kernel);
    return Ok();
  }
  state_.kernel = note;
  Event("kernel_backend", {{"note", note}});
  auto& ideas = *proposed;
  if (ideas.empty()) {
    EndPhase("done", note);
    return Ok();
  }
  for (const search::Candidate& idea : ideas) {
    if (Stopping() || !CanAfford(1 + 2 * spec_.measurement.min_pairs)) break;
    CandidateRecord& c = NewCandidate("kernel", idea, state_.best);
    HONE_TRY(Evaluate(c));
  }
  EndPhase("done", "");
  return Ok();
}

Status Coordinator::Sweep() {
  StartPhase("sweep");
  std::vector<measure::OperatingPoint> points;
  std::vector<int> concs = spec_.workload.sweep_concurrency;
  if (concs.empty()) concs.push_back(spec_.workload.concurrency);
  auto lens = spec_.workload.sweep_isl_osl;
  if (lens.empty()) lens.emplace_back(spec_.workload.isl, spec_.workload.osl);
  if (spec_.workload.sweep_concurrency.empty() && spec_.workload.sweep_isl_osl.empty()) {
    EndPhase("skipped", "no sweep grid in the spec (workload.sweep)");
    return Ok();
  }
  if (state_.BestIsStock()) {
    EndPhase("skipped", "best is the stock configuration: nothing to sweep");
    return Ok();
  }
  if (state_.last_sweep_config == state_.best.Hash() + state_.server_binary) {
    EndPhase("skipped", "nothing changed since the previous sweep");
    return Ok();
  }
  for (int c : concs) {
    for (auto [isl, osl] : lens) points.push_back({c, isl, osl});
  }
  state_.sweep.clear();
  for (const auto& p : points) {
    if (Stopping() || !CanAfford(2 * spec_.measurement.min_pairs)) break;
    SweepPointRecord rec;
    rec.concurrency = p.concurrency;
    rec.isl = p.isl;
    rec.osl = p.osl;
    std::vector<double> a, b;
    std::vector<const measure::TrialOutcome*> dummy;
    double a_intvty = 0, b_intvty = 0, a_tps = 0, b_tps = 0;
    bool failed = false;
    for (int i = 0; i < spec_.measurement.min_pairs; ++i) {
      HONE_ASSIGN_OR_RETURN(measure::TrialOutcome ta, RunTrial("sweep", state_.stock, p, ""));
      HONE_ASSIGN_OR_RETURN(measure::TrialOutcome tb, RunTrial("sweep", state_.best, p, state_.server_binary));
      if (!ta.valid || !tb.valid) {
        failed = true;
        rec.verdict = "INVALID";
        break;
      }
      rec.stock_trials.push_back(ta.id);
      rec.best_trials.push_back(tb.id);
      a.push_back(ta.objective);
      b.push_back(tb.objective);
      a_tps += ta.result.total_tps;
      b_tps += tb.result.total_tps;
      a_intvty += ta.result.intvty.count("p50") ? ta.result.intvty.at("p50") : 0;
      b_intvty += tb.result.intvty.count("p50") ? tb.result.intvty.at("p50") : 0;
    }
    if (!failed && !a.empty()) {
      double n = static_cast<double>(a.size());
      rec.stock_objective = Mean(a);
      rec.best_objective = Mean(b);
      rec.stock_tps = a_tps / n;
      rec.best_tps = b_tps / n;
      rec.stock_intvty = a_intvty / n;
      rec.best_intvty = b_intvty / n;
      measure::VerdictResult r = measure::Judge(PairedInput(a, b, 1));
      rec.verdict = std::string(measure::VerdictName(r.verdict));
      rec.best_config = r.verdict == measure::Verdict::kKeep ? state_.best.ToString() : state_.stock.ToString();
    }
    state_.sweep.push_back(rec);
    Event("sweep_point", {{"point", p.Label()}, {"verdict", rec.verdict}, {"stock", Fmt("%.5g", rec.stock_objective)},
                          {"best", Fmt("%.5g", rec.best_objective)}});
    HONE_TRY(Save());
  }
  state_.last_sweep_config = state_.best.Hash() + state_.server_binary;
  EndPhase("done", std::to_string(state_.sweep.size()) + " operating points");
  return Ok();
}

Status Coordinator::CloseSession() {
  StartPhase("close");
  if (state_.stop_reason.empty()) state_.stop_reason = sys::InterruptRequested() ? "interrupted" : "completed";
  if (sys::InterruptRequested()) state_.interrupted = true;
  // Final end-to-end re-validation of the best configuration against the stock one.
  if (!state_.BestIsStock() && !state_.validated && !state_.interrupted && !state_.baseline_values.empty()) {
    // Sequential, like a candidate's evaluation: min_pairs pairs, then pair_step more
    // while the verdict is inconclusive, up to max_pairs, each look Bonferroni-corrected.
    // Three pairs on a noisy host give intervals too wide to admit a real gain.
    const auto& m = spec_.measurement;
    std::vector<double> a, b;
    std::vector<std::string> trials;
    double best_total = 0, best_output = 0;
    bool ok = true;
    int target = m.min_pairs;
    measure::VerdictResult r;
    while (true) {
      while (static_cast<int>(a.size()) < target) {
        if (Left() < 2 * EstTrial() + 5.0 || sys::InterruptRequested()) {
          ok = false;
          break;
        }
        auto ta = RunTrial("validate", state_.stock, Primary(), "");
        if (!ta && sys::IsNoSpace(ta.error())) return Fail(ta.error());
        if (!ta) {
          ok = false;
          break;
        }
        auto tb = RunTrial("validate", state_.best, Primary());
        if (!tb && sys::IsNoSpace(tb.error())) return Fail(tb.error());
        if (!tb || !ta->valid || !tb->valid) {
          ok = false;
          break;
        }
        a.push_back(ta->objective);
        b.push_back(tb->objective);
        best_total += tb->result.total_tps;
        best_output += tb->result.output_tps;
        trials.push_back(ta->id);
        trials.push_back(tb->id);
      }
      if (static_cast<int>(a.size()) < m.min_pairs) break;  // not even the minimum: not validated
      r = measure::Judge(PairedInput(a, b, PlannedLooks()));
      // Out of budget after the minimum: judge what was measured.
      if (!ok || r.verdict != measure::Verdict::kInconclusive || target >= m.max_pairs) break;
      Progress("  close validation inconclusive after " + std::to_string(a.size()) + " pairs (" +
               Fmt("%+.1f%%", r.gain * 100) + "): " + std::to_string(std::min(m.pair_step, m.max_pairs - target)) +
               " more");
      target = std::min(m.max_pairs, target + m.pair_step);
    }
    state_.validation_trials = trials;
    if (static_cast<int>(a.size()) >= m.min_pairs) {
      state_.validated = true;
      state_.validated_gain = r.gain;
      state_.validated_lo = r.ratio.lo;
      state_.validated_hi = r.ratio.hi;
      state_.validated_stock_objective = Mean(a);
      state_.validated_best_objective = Mean(b);
      state_.validation_verdict = std::string(measure::VerdictName(r.verdict));
      Progress("validated end to end: " + Fmt("%+.1f%%", r.gain * 100) + " [" + Fmt("%.3f", r.ratio.lo) + ", " +
               Fmt("%.3f", r.ratio.hi) + "] " + state_.validation_verdict + " after " + std::to_string(a.size()) +
               " pairs");
      if (services_.roofline) {
        double n = static_cast<double>(b.size());
        auto note = services_.roofline(state_.best, best_total / n, best_output / n);
        if (note) state_.roofline += (state_.roofline.empty() ? "" : "; ") + std::string("best: ") + note->summary;
      }
      if (spec_.accuracy.enabled && state_.close_accuracy.empty()) {
        auto acc = services_.executor->CheckAccuracy(state_.best, "close", state_.server_binary);
        if (acc) state_.close_accuracy = (acc->passed ? "pass: " : "FAIL: ") + acc->detail;
      }
    } else {
      state_.validation_verdict = "NOT_VALIDATED";
      Progress("the best configuration could not be re-validated at close (budget or interrupt)");
    }
    HONE_TRY(Save());
  }
  Event("stop", {{"reason", state_.stop_reason}});
  EndPhase("done", state_.stop_reason);
  HONE_TRY(Save());
  // The report and the recipe come last, so that they show the closed session; the
  // session is "done" only once they are written (a crash here re-runs the close).
  if (services_.closer) {
    auto closed = services_.closer->Close(state_);
    if (!closed && sys::IsNoSpace(closed.error())) return closed;  // resumed, it writes them again
    if (!closed) Event("close_error", {{"error", closed.error().message}});
  }
  state_.phase = "done";
  return Save();
}

Result<SessionState> Coordinator::Run() {
  HONE_TRY(sys::EnsureDir(state_.run_dir));
  if (services_.proposer && !state_.search_state.empty()) HONE_TRY(services_.proposer->Load(state_.search_state));
  if (state_.trials_run == 0 && state_.phases.empty()) {
    Event("session_started", {{"session", state_.session_id}, {"budget_s", Fmt("%.0f", spec_.budget.wall_s)},
                              {"objective", spec_.objective.metric}});
  } else {
    Event("resumed", {{"trials_run", std::to_string(state_.trials_run)}});
    Progress("resuming " + state_.session_id + " in phase " + state_.phase + " after " +
             std::to_string(state_.trials_run) + " trials");
  }
  HONE_TRY(Save());
  // One wrapper per phase: a failed phase is recorded and the session moves on.
  std::optional<Error> no_space;  // the run directory is full: stop, to resume once there is room
  auto guarded = [&](Status (Coordinator::*phase)()) -> bool {
    Status s = (this->*phase)();
    if (s) return true;
    if (sys::IsNoSpace(s.error())) {
      no_space = s.error();
      return false;
    }
    if (s.error().code == ErrorCode::kCancelled || sys::InterruptRequested()) {
      state_.interrupted = true;
      state_.stop_reason = "interrupted";
      EndPhase("interrupted", "");
      return false;
    }
    EndPhase("failed", s.error().message);
    Event("phase_error", {{"error", s.error().ToString()}});
    return true;
  };
  while (state_.phase != "close" && state_.phase != "done") {
    if (!state_.stop_reason.empty() || sys::InterruptRequested()) break;
    if (state_.phase == "prelude") {
      if (!guarded(&Coordinator::Prelude)) break;
      if (!state_.stop_reason.empty()) break;
      state_.phase = "framework";
    } else if (state_.phase == "framework") {
      if (!guarded(&Coordinator::Framework)) break;
      state_.phase = "kernel";
    } else if (state_.phase == "kernel") {
      if (!guarded(&Coordinator::Kernel)) break;
      state_.phase = "sweep";
    } else if (state_.phase == "sweep") {
      if (!guarded(&Coordinator::Sweep)) break;
      // Cycle or close: only while budget, gains and cycles remain.
      bool gained = keeps_this_cycle_ > 0;
      bool budget = CanAfford(1 + 2 * spec_.measurement.min_pairs);
      if (state_.cycle < spec_.budget.max_cycles && gained && budget && !Stopping() && !state_.roofline_saturated) {
        ++state_.cycle;
        state_.phase = "framework";
        Event("cycle", {{"cycle", std::to_string(state_.cycle)}});
      } else {
        state_.stop_reason = Stopping()                              ? (sys::InterruptRequested() ? "interrupted" : "trial limit")
                             : !budget                               ? "budget"
                             : state_.cycle >= spec_.budget.max_cycles ? "cycle ceiling reached"
                             : state_.roofline_saturated              ? "at the roofline: no headroom left"
                                                                      : "converged: the last cycle found no gain";
        state_.phase = "close";
      }
    } else {
      break;
    }
    HONE_TRY(Save());
  }
  if (no_space) return Fail(*no_space);
  if (state_.phase != "done") HONE_TRY(CloseSession());
  return state_;
}

std::string StatusText(const SessionState& s, const std::vector<Event>& events, double now_unix_s) {
  char buf[512];
  double started = static_cast<double>(s.started_unix_us) * 1e-6;
  std::string out;
  std::snprintf(buf, sizeof buf, "session %s: phase %s (cycle %d), %d trials, %.0fs elapsed, %.0fs of budget left\n",
                s.session_id.c_str(), s.phase.c_str(), s.cycle, s.trials_run, now_unix_s - started,
                std::max(0.0, s.deadline_unix_s - now_unix_s));
  out += buf;
  if (!s.baseline_values.empty()) {
    std::snprintf(buf, sizeof buf, "baseline %.4g (trials %s), noise floor %.2f%%\n", s.baseline_objective,
                  Join(s.baseline_trials, ",").c_str(), s.noise_floor * 100);
    out += buf;
  }
  int keeps = 0;
  for (const auto& c : s.candidates) keeps += c.verdict == "KEEP";
  std::snprintf(buf, sizeof buf, "best %s (%d kept of %zu candidates)\n", s.best.ToString().c_str(), keeps,
                s.candidates.size());
  out += buf;
  if (s.validated) {
    std::snprintf(buf, sizeof buf, "validated gain %+.1f%% [%.3f, %.3f] (%s)\n", s.validated_gain * 100,
                  s.validated_lo, s.validated_hi, s.validation_verdict.c_str());
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
